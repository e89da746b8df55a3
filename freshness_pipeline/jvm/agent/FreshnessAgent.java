package freshness.agent;

import java.lang.instrument.ClassFileTransformer;
import java.lang.instrument.Instrumentation;
import java.security.ProtectionDomain;
import java.util.function.UnaryOperator;

/**
 * The project's Java agent: `-javaagent:freshness-agent.jar=PARTS`, PARTS a
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
          ConnectCodeCacheAgent.install(instrumentation);
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

  /**
   * Rewrites one class as it loads: `rewrite` gives its new bytes, or null when the class has
   * not what it expects (another version), and then the class stays as it is and `who` says
   * so on stderr, as it does for an error.
   */
  static final class OneClass implements ClassFileTransformer {
    private final String target;
    private final UnaryOperator<byte[]> rewrite;
    private final String who;
    private final String unchanged;
    private final String changed;

    /** `changed`: said when the rewrite was made, or null to say nothing. */
    OneClass(
        String target, UnaryOperator<byte[]> rewrite, String who, String unchanged, String changed) {
      this.target = target;
      this.rewrite = rewrite;
      this.who = who;
      this.unchanged = unchanged;
      this.changed = changed;
    }

    @Override
    public byte[] transform(
        ClassLoader loader,
        String name,
        Class<?> redefined,
        ProtectionDomain domain,
        byte[] bytes) {
      if (!target.equals(name)) {
        return null;
      }
      try {
        byte[] result = rewrite.apply(bytes);
        if (result == null) {
          System.err.println(who + ": " + name + " " + unchanged);
        } else if (changed != null) {
          System.err.println(who + ": " + changed);
        }
        return result;
      } catch (RuntimeException e) {
        System.err.println(who + ": left " + name + " unchanged: " + e);
        return null;
      }
    }
  }
}
