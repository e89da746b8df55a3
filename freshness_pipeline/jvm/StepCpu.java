package io.freshness.hudi;

import com.sun.management.OperatingSystemMXBean;
import java.lang.management.CompilationMXBean;
import java.lang.management.GarbageCollectorMXBean;
import java.lang.management.ManagementFactory;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import org.apache.spark.SparkConf;
import org.apache.spark.executor.TaskMetrics;
import org.apache.spark.metrics.source.CodegenMetrics;
import org.apache.spark.scheduler.SparkListener;
import org.apache.spark.scheduler.SparkListenerJobStart;
import org.apache.spark.scheduler.SparkListenerStageCompleted;
import org.apache.spark.scheduler.SparkListenerTaskEnd;
import org.apache.spark.scheduler.StageInfo;

/**
 * What a step costs in the JVM that runs it, measured by the JVM itself.
 *
 * <p>A driver listener ({@code spark.extraListeners}): a step's Spark jobs carry a job tag of
 * ours ({@code freshness-step-...}, set by the runner for its session); every task of their
 * stages adds its executor CPU, run time, GC time and deserialization CPU to that tag. The
 * first job of a tag also notes the JVM's process CPU, JIT compilation and GC times and the
 * count of classes Spark's code generation has compiled, so that
 * {@link #take} reports, beside the tasks' own CPU, what the whole JVM spent while the step ran
 * (its driver work: planning, code generation, Hudi's timeline and file listing; and whatever
 * ran beside it). The runner reads it with {@code SELECT reflect('io.freshness.hudi.StepCpu',
 * 'take', tag)}, one query, which evaluates in the driver where the executors share its JVM
 * (local mode: the Spark service and a run's own Spark).
 */
public class StepCpu extends SparkListener {
  static final String PREFIX = "freshness-step-";
  private static final String TAGS = "spark.job.tags";
  private static final String POOL = "spark.scheduler.pool";

  /** Spark jobs started in this JVM, by the FAIR scheduler pool they were submitted to. */
  private static final Map<String, Long> JOBS_BY_POOL = new ConcurrentHashMap<>();

  /**
   * Per tag: tasks, executor CPU ns, run ms, GC ms, deserialize CPU ns, and at the start the
   * JVM's CPU ns, JIT ms, GC ms and classes compiled by Spark's code generation.
   */
  private static final Map<String, long[]> BY_TAG = new ConcurrentHashMap<>();

  private static final Map<Integer, String> STAGE_TAG = new ConcurrentHashMap<>();

  public StepCpu() {}

  public StepCpu(SparkConf conf) {}

  @Override
  public void onJobStart(SparkListenerJobStart job) {
    String pool = job.properties() == null ? null : job.properties().getProperty(POOL);
    JOBS_BY_POOL.merge(pool == null ? "default" : pool, 1L, Long::sum);
    String tags = job.properties() == null ? null : job.properties().getProperty(TAGS);
    if (tags == null) {
      return;
    }
    for (String tag : tags.split(",")) {
      // Spark Connect turns a session's tag into a job tag that ends with it
      // (SparkConnect_OperationTag_User_..._Session_..._Tag_<tag>); a local session's is
      // the tag itself.
      int at = tag.indexOf(PREFIX);
      if (at >= 0) {
        String step = tag.substring(at);
        BY_TAG.computeIfAbsent(step, t -> started());
        scala.collection.Iterator<StageInfo> stages = job.stageInfos().iterator();
        while (stages.hasNext()) {
          STAGE_TAG.put(stages.next().stageId(), step);
        }
        return;
      }
    }
  }

  @Override
  public void onTaskEnd(SparkListenerTaskEnd task) {
    String tag = STAGE_TAG.get(task.stageId());
    TaskMetrics metrics = task.taskMetrics();
    if (tag == null || metrics == null) {
      return;
    }
    long[] sums = BY_TAG.get(tag);
    if (sums == null) {
      return;
    }
    synchronized (sums) {
      sums[0] += 1;
      sums[1] += metrics.executorCpuTime();
      sums[2] += metrics.executorRunTime();
      sums[3] += metrics.jvmGCTime();
      sums[4] += metrics.executorDeserializeCpuTime();
    }
  }

  @Override
  public void onStageCompleted(SparkListenerStageCompleted stage) {
    STAGE_TAG.remove(stage.stageInfo().stageId());
  }

  private static long[] started() {
    long[] sums = new long[9];
    long[] jvm = jvmNow();
    sums[5] = jvm[0];
    sums[6] = jvm[1];
    sums[7] = jvm[2];
    sums[8] = jvm[3];
    return sums;
  }

  /**
   * The JVM's process CPU (ns), total JIT compilation (ms), total GC (ms) and the classes
   * Spark's code generation compiled (Janino: each is then JIT-compiled too) so far.
   */
  static long[] jvmNow() {
    long cpu = -1;
    java.lang.management.OperatingSystemMXBean os = ManagementFactory.getOperatingSystemMXBean();
    if (os instanceof OperatingSystemMXBean) {
      cpu = ((OperatingSystemMXBean) os).getProcessCpuTime();
    }
    CompilationMXBean jit = ManagementFactory.getCompilationMXBean();
    long compiled = jit != null && jit.isCompilationTimeMonitoringSupported() ? jit.getTotalCompilationTime() : -1;
    long gc = 0;
    for (GarbageCollectorMXBean collector : ManagementFactory.getGarbageCollectorMXBeans()) {
      gc += Math.max(0, collector.getCollectionTime());
    }
    long generated = CodegenMetrics.METRIC_COMPILATION_TIME().getCount();
    return new long[] {cpu, compiled, gc, generated};
  }

  /**
   * A tag's sums as JSON, and the tag forgotten: tasks, task CPU and deserialization CPU (s),
   * task run and GC time (s), and the JVM's CPU, JIT and GC seconds and the classes Spark
   * compiled since the tag's first job.
   * An unknown tag (no Spark job ran under it): {"tasks": 0}.
   */
  public static String take(String tag) {
    long[] sums = BY_TAG.remove(tag);
    if (sums == null) {
      return "{\"tasks\": 0}";
    }
    long[] jvm = jvmNow();
    synchronized (sums) {
      return String.format(
          java.util.Locale.ROOT,
          "{\"tasks\": %d, \"task_cpu_s\": %.6f, \"task_run_s\": %.3f, \"task_gc_s\": %.3f, "
              + "\"task_deserialize_cpu_s\": %.6f, \"jvm_cpu_s\": %.6f, \"jvm_jit_s\": %.3f, "
              + "\"jvm_gc_s\": %.3f, \"jvm_codegen_classes\": %d}",
          sums[0],
          sums[1] / 1e9,
          sums[2] / 1e3,
          sums[3] / 1e3,
          sums[4] / 1e9,
          jvm[0] < 0 || sums[5] < 0 ? -1.0 : (jvm[0] - sums[5]) / 1e9,
          jvm[1] < 0 || sums[6] < 0 ? -1.0 : (jvm[1] - sums[6]) / 1e3,
          (jvm[2] - sums[7]) / 1e3,
          jvm[3] - sums[8]);
    }
  }

  /** Spark jobs started in this JVM so far by scheduler pool, as JSON: {"default": 12, ...}. */
  public static String pools() {
    StringBuilder json = new StringBuilder("{");
    for (Map.Entry<String, Long> entry : new java.util.TreeMap<>(JOBS_BY_POOL).entrySet()) {
      if (json.length() > 1) {
        json.append(", ");
      }
      json.append('"').append(entry.getKey().replace("\\", "\\\\").replace("\"", "\\\""));
      json.append("\": ").append(entry.getValue());
    }
    return json.append('}').toString();
  }
}
