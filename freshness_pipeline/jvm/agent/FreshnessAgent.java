package freshness.agent;

import java.lang.instrument.Instrumentation;

/**
 * The project's Java agent: `-javaagent:freshness-connect-agent.jar=PARTS`, PARTS a
 * comma-separated list of `connect` (Spark Connect sessions without code of their own share
 * one class loader: ConnectCodeCacheAgent) and `hadoop-conf` (Hadoop configurations written
 * for tasks leave out their entries' sources: HadoopConfSources).
 */
public final class FreshnessAgent {
  private FreshnessAgent() {}

  public static void premain(String args, Instrumentation instrumentation) {
    for (String part : (args == null ? "" : args).split(",")) {
      switch (part.trim()) {
        case "connect":
          ConnectCodeCacheAgent.premain(null, instrumentation);
          break;
        case "hadoop-conf":
          HadoopConfSources.install(instrumentation);
          break;
        default:
          System.err.println(
              "FreshnessAgent: unknown part '" + part + "' (expected connect or hadoop-conf)");
      }
    }
  }
}
