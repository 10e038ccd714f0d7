import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;

import org.apache.kafka.common.metrics.KafkaMetric;
import org.apache.kafka.common.metrics.MetricsReporter;
import org.apache.kafka.server.telemetry.ClientTelemetryExporter;
import org.apache.kafka.server.telemetry.ClientTelemetryExporterProvider;

/**
 * A broker metrics reporter that takes client telemetry (KIP-714) and keeps
 * only a count of the pushes.  A broker offers GetTelemetrySubscriptions and
 * PushTelemetry on its listeners only when a reporter like this one is
 * configured ({@code metric.reporters=TelemetrySink}).
 */
public class TelemetrySink implements MetricsReporter, ClientTelemetryExporterProvider {
    static final AtomicInteger PUSHES = new AtomicInteger();

    @Override public void configure(Map<String, ?> configs) { }
    @Override public void init(List<KafkaMetric> metrics) { }
    @Override public void metricChange(KafkaMetric metric) { }
    @Override public void metricRemoval(KafkaMetric metric) { }
    @Override public void close() { }

    @Override
    public ClientTelemetryExporter clientTelemetryExporter() {
        return (context, payload) -> PUSHES.incrementAndGet();
    }
}
