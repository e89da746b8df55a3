package freshness.connect;

import java.lang.reflect.Method;
import java.net.InetSocketAddress;
import org.apache.spark.SparkConf;
import org.apache.spark.SparkContext;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.connect.config.Connect$;
import org.apache.spark.sql.connect.service.SparkConnectInterceptorRegistry$;
import org.apache.spark.sql.connect.service.SparkConnectService;
import org.apache.spark.sql.connect.service.SparkConnectService$;
import org.sparkproject.connect.grpc.Server;
import org.sparkproject.connect.grpc.netty.NettyServerBuilder;
import org.sparkproject.connect.grpc.protobuf.services.ProtoReflectionService;

/**
 * Spark's own Connect server (`SparkConnectServer`), bound to one address instead of all.
 *
 * <p>Spark 3.5's server binds its gRPC port on every interface (`NettyServerBuilder.forPort`);
 * the setting `spark.connect.grpc.binding.address` only arrives in Spark 4.0. A service that
 * runs SQL for whoever connects must not listen beyond the machine unless asked, so this
 * launcher builds the same gRPC server as `SparkConnectService.startGRPCService` (same
 * service, interceptors, message size and reflection service), on the address given by
 * `spark.freshness.connect.bindAddress` (default 127.0.0.1), and hands it to
 * `SparkConnectService` so its stop and session handling work as before.
 */
public final class LoopbackConnectServer {
  public static final String BIND_ADDRESS_KEY = "spark.freshness.connect.bindAddress";

  private LoopbackConnectServer() {}

  public static void main(String[] args) throws Exception {
    SparkSession session = SparkSession.builder().getOrCreate();
    SparkContext context = session.sparkContext();
    SparkConf conf = context.getConf();
    String host = conf.get(BIND_ADDRESS_KEY, "127.0.0.1");
    int port = (Integer) conf.get(Connect$.MODULE$.CONNECT_GRPC_BINDING_PORT());
    long maxInbound = (Long) conf.get(Connect$.MODULE$.CONNECT_GRPC_MAX_INBOUND_MESSAGE_SIZE());
    boolean debug = conf.getBoolean("spark.connect.grpc.debug.enabled", true);
    try {
      NettyServerBuilder builder =
          NettyServerBuilder.forAddress(new InetSocketAddress(host, port))
              .maxInboundMessageSize((int) maxInbound);
      builder.addService(new SparkConnectService(debug));
      SparkConnectInterceptorRegistry$.MODULE$.chainInterceptors(builder);
      if (debug) {
        builder.addService(ProtoReflectionService.newInstance());
      }
      Server server = builder.build();
      SparkConnectService$.MODULE$.server_$eq(server);
      server.start();
      // The Connect tab and listener, as SparkConnectService.start makes them.
      Method ui =
          SparkConnectService$.class.getDeclaredMethod("createListenerAndUI", SparkContext.class);
      ui.setAccessible(true);
      ui.invoke(SparkConnectService$.MODULE$, context);
      System.err.println(
          "LoopbackConnectServer: Spark Connect server started at " + host + ":" + port);
      server.awaitTermination();
    } finally {
      session.stop();
    }
  }
}
