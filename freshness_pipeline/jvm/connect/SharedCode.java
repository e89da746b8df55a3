package freshness.connect;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.stream.Stream;
import org.apache.spark.JobArtifactState;
import org.apache.spark.sql.connect.artifact.SparkConnectArtifactManager;
import org.apache.spark.sql.connect.service.SessionHolder;
import org.apache.spark.util.Utils;

/**
 * One class loader for every Connect session that brought no code of its own, so Spark's
 * generated code is compiled once and not once per query.
 *
 * <p>Spark keys its cache of generated classes by the thread's context class loader
 * (SPARK-44795). Spark 3.5's Connect server runs each request under a class loader it
 * makes for that request (`SparkConnectArtifactManager.classloader`), and each session's
 * tasks under a class loader the executor makes for that session, so a new session never
 * finds the classes an earlier one generated: every run (a session of its own) compiled
 * all of its classes again, 38-91 a step for the six jobs. Spark 4.0 caches the session's
 * class loader (SPARK-50243). Here, for a
 * session that added no jar, class file or Python file, the request runs under the
 * server's own class loader and its jobs under the default session's artifacts, which is
 * what such a session's class loader would resolve anyway; a session that brought its own
 * code keeps Spark's isolation. `ConnectCodeCacheAgent` routes Spark's two call sites
 * here.
 */
public final class SharedCode {
  private SharedCode() {}

  /** In place of `SessionHolder.classloader()` for a request's context class loader. */
  public static ClassLoader classloader(SessionHolder holder) {
    if (hasOwnCode(holder.artifactManager())) {
      return holder.classloader();
    }
    return Utils.getContextOrSparkClassLoader();
  }

  /** In place of `SparkConnectArtifactManager.state()` for a request's jobs: none (the
   * default session's artifacts) for a session without code of its own. */
  public static JobArtifactState state(SparkConnectArtifactManager manager) {
    return hasOwnCode(manager) ? manager.state() : null;
  }

  static boolean hasOwnCode(SparkConnectArtifactManager manager) {
    // Spark's stub classes (spark.connect.scalaUdf.stubPrefixes) stand in for a Scala
    // client's classes that its UDFs' uploaded classes refer to: without an upload, no UDF
    // of the session's can need one.
    if (!manager.getSparkConnectAddedJars().isEmpty()
        || !manager.getSparkConnectPythonIncludes().isEmpty()) {
      return true;
    }
    Path classes = manager.classDir();
    if (!Files.isDirectory(classes)) {
      return false;
    }
    try (Stream<Path> entries = Files.list(classes)) {
      return entries.findAny().isPresent();
    } catch (IOException e) {
      return true; // unreadable: keep Spark's isolation
    }
  }
}
