package interop.consumer;

import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.security.KeyStore;
import java.security.cert.Certificate;
import java.util.ArrayList;
import java.util.Base64;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;

import org.eclipse.paho.client.mqttv3.MqttClient;
import org.eclipse.paho.client.mqttv3.MqttMessage;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.beans.factory.annotation.Value;
import org.springframework.boot.SpringApplication;
import org.springframework.context.ApplicationContext;
import org.springframework.context.event.ContextRefreshedEvent;
import org.springframework.stereotype.Component;
import org.springframework.util.LinkedMultiValueMap;
import org.springframework.util.MultiValueMap;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;

import eu.arrowhead.common.http.filter.authentication.AuthenticationPolicy;
import eu.arrowhead.common.init.ApplicationInitListener;
import eu.arrowhead.common.model.InterfaceModel;
import eu.arrowhead.common.model.ServiceModel;
import eu.arrowhead.common.mqtt.ArrowheadMqttService;
import eu.arrowhead.common.mqtt.MqttService;
import eu.arrowhead.dto.OrchestrationNotifyInterfaceDTO;
import eu.arrowhead.dto.OrchestrationRequestDTO;
import eu.arrowhead.dto.OrchestrationResponseDTO;
import eu.arrowhead.dto.OrchestrationResultDTO;
import eu.arrowhead.dto.OrchestrationServiceRequirementDTO;
import eu.arrowhead.dto.OrchestrationSubscriptionRequestDTO;
import eu.arrowhead.dto.ServiceInstanceListResponseDTO;
import eu.arrowhead.dto.ServiceInstanceLookupRequestDTO;
import eu.arrowhead.dto.ServiceInstanceResponseDTO;
import eu.arrowhead.dto.ServiceInstanceInterfaceResponseDTO;

/**
 * What an Arrowhead 5 Java application system does with an orchestrator, once it has been
 * registered by the common library: a pull over HTTP through the ServiceRegistry, a subscription
 * whose push arrives over MQTT, and a pull over the orchestrator's MQTT interface. Each step logs
 * "STEP <name> PASS|FAIL: <what it saw>"; the process exits 0 when all passed, 1 otherwise.
 */
@Component
public class InteropConsumerFlow extends ApplicationInitListener {

	private static final String ORCHESTRATION = "serviceOrchestration";

	@Autowired
	private ApplicationContext context;

	@Autowired
	private ArrowheadMqttService arrowheadMqttService;

	@Autowired
	private MqttService mqttService;

	@Value("${interop.orchestrator}")
	private String orchestrator;

	@Value("${interop.service-definition}")
	private String serviceDefinition;

	@Value("${interop.push-topic}")
	private String pushTopic;

	@Value("${interop.wait-seconds}")
	private int waitSeconds;

	@Value("${interop.steps}")
	private List<String> steps;

	private final ObjectMapper json = new ObjectMapper();
	private final List<String> failures = new ArrayList<>();
	private String subscriptionId;

	@Override
	protected void customInit(final ContextRefreshedEvent event) {
		final Thread flow = new Thread(this::run, "interop-flow");
		flow.start();
	}

	private void run() {
		final Map<String, Step> known = new LinkedHashMap<>();
		known.put("http-pull", this::httpPull);
		known.put("subscribe-mqtt-push", this::subscribeAndReceivePush);
		known.put("unsubscribe", this::unsubscribe);
		known.put("mqtt-pull", this::mqttPull);
		known.put("collector", this::collectorDefaultMode);
		for (final String name : steps) {
			step(name, known.getOrDefault(name.trim(), () -> {
				throw new IllegalArgumentException("no such step: " + name);
			}));
		}
		final int code = failures.isEmpty() ? 0 : 1;
		logger.info("RESULT {}", failures.isEmpty() ? "all steps passed" : "failed: " + failures);
		System.exit(SpringApplication.exit(context, () -> code));
	}

	private interface Step {
		String run() throws Exception;
	}

	private void step(final String name, final Step step) {
		try {
			logger.info("STEP {} PASS: {}", name, step.run());
		} catch (final Exception ex) {
			failures.add(name);
			logger.error("STEP {} FAIL: {}", name, ex.toString());
		}
	}

	private OrchestrationRequestDTO request() {
		final OrchestrationServiceRequirementDTO requirement = new OrchestrationServiceRequirementDTO(
				serviceDefinition, null, null, null, null, null, null, null, null, null);
		return new OrchestrationRequestDTO(requirement, Map.of(), null, null);
	}

	// A pull as Java systems make it: the orchestrator's serviceOrchestration instance found in
	// the ServiceRegistry, its `pull` operation called with the common library's HTTP client.
	private String httpPull() {
		final OrchestrationResponseDTO response = arrowheadHttpService.consumeService(
				ORCHESTRATION, "pull", orchestrator, OrchestrationResponseDTO.class, request());
		if (response == null || response.results() == null || response.results().isEmpty()) {
			throw new IllegalStateException("no results: " + response);
		}
		final OrchestrationResultDTO first = response.results().getFirst();
		if (first.interfaces() == null || first.interfaces().isEmpty()) {
			throw new IllegalStateException("the first result has no interfaces: " + first);
		}
		return response.results().size() + " result(s), first " + first.serviceInstanceId() + " of "
				+ first.providerName() + " via " + first.interfaces().getFirst().templateName() + " "
				+ first.interfaces().getFirst().properties();
	}

	// A subscription with an MQTT notify interface and trigger=true, made over HTTP; the push
	// received with the common library's MQTT subscription on the broker the orchestrator uses.
	private String subscribeAndReceivePush() throws Exception {
		final BlockingQueue<MqttMessage> pushes = arrowheadMqttService.subscribe(
				sysInfo.getMqttBrokerAddress(), sysInfo.getMqttBrokerPort(), sysInfo.isSslEnabled(), pushTopic);
		final OrchestrationSubscriptionRequestDTO subscription = new OrchestrationSubscriptionRequestDTO(
				sysInfo.getSystemName(), request(),
				new OrchestrationNotifyInterfaceDTO(sysInfo.isSslEnabled() ? "MQTTS" : "MQTT", Map.of("topic", pushTopic)),
				null);
		final MultiValueMap<String, String> trigger = new LinkedMultiValueMap<>();
		trigger.add("trigger", "true");
		final String answer = arrowheadHttpService.consumeService(
				ORCHESTRATION, "subscribe", orchestrator, String.class, subscription, trigger);
		subscriptionId = answer == null ? null : answer.replace("\"", "").trim();
		final MqttMessage push = pushes.poll(waitSeconds, TimeUnit.SECONDS);
		if (push == null) {
			throw new IllegalStateException("no push on " + pushTopic + " within " + waitSeconds + " s");
		}
		final JsonNode notification = json.readTree(push.getPayload());
		final JsonNode results = notification.path("payload").path("results");
		if (!results.isArray() || results.isEmpty()) {
			throw new IllegalStateException("a push without results: " + notification);
		}
		return "subscription " + subscriptionId + "; pushed from " + notification.path("sender").asText()
				+ " to " + notification.path("receiver").asText() + " with " + results.size()
				+ " result(s), first " + results.get(0).path("serviceInstanceId").asText();
	}

	// The subscription ended with the registered `unsubscribe` operation, its id passed as the
	// common library passes path parameters.
	private String unsubscribe() {
		if (subscriptionId == null || subscriptionId.isEmpty()) {
			throw new IllegalStateException("no subscription to end");
		}
		arrowheadHttpService.consumeService(ORCHESTRATION, "unsubscribe", orchestrator, String.class, List.of(subscriptionId));
		return "subscription " + subscriptionId + " ended";
	}

	// A pull over the orchestrator's MQTT interface: its generic_mqtt(s) interface looked up in
	// the ServiceRegistry, the request template published to <baseTopic>pull, the answer read
	// from our response topic.
	private String mqttPull() throws Exception {
		final String template = sysInfo.isSslEnabled() ? "generic_mqtts" : "generic_mqtt";
		final ServiceInstanceLookupRequestDTO lookup = new ServiceInstanceLookupRequestDTO(
				null, List.of(orchestrator), List.of(ORCHESTRATION), null, null, null, null, List.of(template), null, null);
		final MultiValueMap<String, String> notVerbose = new LinkedMultiValueMap<>();
		notVerbose.add("verbose", "false");
		final ServiceInstanceListResponseDTO found = arrowheadHttpService.consumeService(
				"serviceDiscovery", "lookup", ServiceInstanceListResponseDTO.class, lookup, notVerbose);
		final ServiceInstanceInterfaceResponseDTO mqtt = found.entries().stream()
				.map(ServiceInstanceResponseDTO::interfaces).flatMap(List::stream)
				.filter(i -> template.equals(i.templateName())).findFirst()
				.orElseThrow(() -> new IllegalStateException("no " + template + " interface registered: " + found));
		final Map<String, Object> properties = mqtt.properties();
		final String address = ((List<?>) properties.get("accessAddresses")).getFirst().toString();
		final int port = ((Number) properties.get("accessPort")).intValue();
		final String baseTopic = properties.get("baseTopic").toString();

		final String connection = "interop-mqtt-pull";
		mqttService.connect(connection, address, port, "InteropConsumer-" + UUID.randomUUID(),
				sysInfo.getSystemName(), sysInfo.getMqttClientPassword());
		final MqttClient client = mqttService.client(connection);
		final String responseTopic = "interop/consumer/response/" + UUID.randomUUID();
		final BlockingQueue<MqttMessage> answers = new LinkedBlockingQueue<>();
		client.subscribe(responseTopic, 1, (topic, message) -> answers.add(message));
		try {
			final Map<String, Object> envelope = new LinkedHashMap<>();
			envelope.put("traceId", "interop-" + UUID.randomUUID());
			envelope.put("authentication", mqttIdentity());
			envelope.put("responseTopic", responseTopic);
			envelope.put("qosRequirement", 1);
			envelope.put("params", Map.of());
			envelope.put("payload", request());
			client.publish(baseTopic + "pull", json.writeValueAsBytes(envelope), 1, false);
			final MqttMessage message = answers.poll(waitSeconds, TimeUnit.SECONDS);
			if (message == null) {
				throw new IllegalStateException("no answer on " + responseTopic + " within " + waitSeconds + " s");
			}
			final JsonNode answer = json.readTree(message.getPayload());
			final JsonNode results = answer.path("payload").path("results");
			if (answer.path("status").asInt() != 200 || !results.isArray() || results.isEmpty()) {
				throw new IllegalStateException("answer " + answer);
			}
			return "status 200 on " + baseTopic + "pull via " + address + ":" + port + ", " + results.size()
					+ " result(s), first " + results.get(0).path("serviceInstanceId").asText();
		} finally {
			mqttService.disconnect(connection);
		}
	}

	// What the common library does by itself for a service it has to consume (HttpCollectorDriver,
	// default mode SR_AND_ORCH): the ServiceRegistry first; when it offers no instance, the
	// serviceOrchestration of DynamicServiceOrchestration, then of FlexibleServiceOrchestration,
	// pulled with the collector's own request. The result is what consumeService would bind to.
	private String collectorDefaultMode() {
		final String template = sysInfo.isSslEnabled() ? "generic_https" : "generic_http";
		final ServiceModel model = serviceCollector.getServiceModel(serviceDefinition, template, null);
		if (model == null) {
			throw new IllegalStateException("the collector found no " + serviceDefinition);
		}
		final InterfaceModel bound = model.interfaces().getFirst();
		return serviceDefinition + " " + model.version() + " via " + bound.templateName() + " "
				+ bound.properties();
	}

	// The authentication field of an MQTT request, as the Java systems' MQTT filters read it.
	private String mqttIdentity() throws Exception {
		final AuthenticationPolicy policy = sysInfo.getAuthenticationPolicy();
		if (policy == AuthenticationPolicy.CERTIFICATE) {
			final KeyStore store = KeyStore.getInstance(sysInfo.getSslProperties().getKeyStoreType());
			try (InputStream in = sysInfo.getSslProperties().getKeyStore().getInputStream()) {
				store.load(in, sysInfo.getSslProperties().getKeyStorePassword().toCharArray());
			}
			final Certificate certificate = store.getCertificate(sysInfo.getSslProperties().getKeyAlias());
			final String pem = "-----BEGIN CERTIFICATE-----\n"
					+ Base64.getMimeEncoder(64, "\n".getBytes(StandardCharsets.US_ASCII)).encodeToString(certificate.getEncoded())
					+ "\n-----END CERTIFICATE-----\n";
			return Base64.getEncoder().encodeToString(pem.getBytes(StandardCharsets.US_ASCII));
		}
		if (policy == AuthenticationPolicy.OUTSOURCED) {
			return "IDENTITY-TOKEN//" + sysInfo.getIdentityToken();
		}
		return "SYSTEM//" + sysInfo.getSystemName();
	}
}
