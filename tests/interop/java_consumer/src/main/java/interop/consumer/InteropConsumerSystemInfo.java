package interop.consumer;

import java.util.List;
import java.util.Set;

import org.springframework.stereotype.Component;

import eu.arrowhead.common.Constants;
import eu.arrowhead.common.SystemInfo;
import eu.arrowhead.common.http.filter.authentication.AuthenticationPolicy;
import eu.arrowhead.common.model.ServiceModel;
import eu.arrowhead.common.model.SystemModel;

/** A consumer only: it registers itself in the ServiceRegistry and provides no service. */
@Component(Constants.BEAN_NAME_SYSTEM_INFO)
public class InteropConsumerSystemInfo extends SystemInfo {

	public static final String NAME = "InteropConsumer";

	private SystemModel systemModel;

	@Override
	public String getSystemName() {
		return NAME;
	}

	@Override
	public List<ServiceModel> getServices() {
		return List.of();
	}

	@Override
	public SystemModel getSystemModel() {
		if (systemModel == null) {
			SystemModel.Builder builder = new SystemModel.Builder()
					.address(getAddress())
					.version(Constants.AH_FRAMEWORK_VERSION);
			if (AuthenticationPolicy.CERTIFICATE == getAuthenticationPolicy()) {
				builder = builder.metadata(Constants.METADATA_KEY_X509_PUBLIC_KEY, getPublicKey());
			}
			systemModel = builder.build();
		}
		return systemModel;
	}

	@Override
	protected PublicConfigurationKeysAndDefaults getPublicConfigurationKeysAndDefaults() {
		return new PublicConfigurationKeysAndDefaults(Set.of(Constants.SERVER_ADDRESS, Constants.SERVER_PORT), null);
	}
}
