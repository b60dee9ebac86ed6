package interop.consumer;

import java.util.List;

import org.springframework.boot.SpringApplication;
import org.springframework.boot.autoconfigure.SpringBootApplication;
import org.springframework.boot.autoconfigure.jdbc.DataSourceAutoConfiguration;
import org.springframework.boot.autoconfigure.orm.jpa.HibernateJpaAutoConfiguration;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.ComponentScan;
import org.springframework.context.annotation.FilterType;

import eu.arrowhead.common.Constants;
import eu.arrowhead.common.jpa.service.LogDbService;
import eu.arrowhead.common.mqtt.handler.MqttTopicHandler;
import eu.arrowhead.common.service.LogService;

/**
 * An application system with no database: the common library's JPA configuration is left out,
 * and with it the two log services that need a repository only systems with a database have.
 */
@SpringBootApplication(exclude = { DataSourceAutoConfiguration.class, HibernateJpaAutoConfiguration.class })
@ComponentScan(basePackages = { Constants.BASE_PACKAGE, "interop.consumer" },
		excludeFilters = @ComponentScan.Filter(type = FilterType.ASSIGNABLE_TYPE,
				classes = { LogDbService.class, LogService.class }))
public class InteropConsumerMain {

	// The common library's MQTT dispatcher wants the system's topic handlers even when, as
	// here, the system serves nothing over MQTT and uses MQTT as a client only.
	@Bean
	public List<MqttTopicHandler> mqttTopicHandlers() {
		return List.of();
	}

	public static void main(final String[] args) {
		SpringApplication.run(InteropConsumerMain.class, args);
	}
}
