package io.freshness.hudi;

import java.util.Map;
import java.util.concurrent.CancellationException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.atomic.AtomicReference;
import org.apache.avro.Schema;
import org.apache.hudi.avro.model.HoodieClusteringGroup;
import org.apache.hudi.avro.model.HoodieClusteringPlan;
import org.apache.hudi.client.WriteStatus;
import org.apache.hudi.client.clustering.run.strategy.SparkSortAndSizeExecutionStrategy;
import org.apache.hudi.common.data.HoodieData;
import org.apache.hudi.common.engine.HoodieEngineContext;
import org.apache.hudi.common.table.HoodieTableMetaClient;
import org.apache.hudi.config.HoodieWriteConfig;
import org.apache.hudi.exception.HoodieClusteringException;
import org.apache.hudi.table.HoodieTable;
import org.apache.hudi.table.action.HoodieWriteMetadata;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Hudi's sort-and-size clustering, which keeps the real cause of a failed file group and can be
 * told to fail after writing its files.
 *
 * <p>The plan records its execution strategy, so every clustering plan we schedule names this
 * class. It behaves as its parent with three differences:
 *
 * <ul>
 *   <li>It keeps a heartbeat while its driver executes and commits the clustering ({@link
 *       ClusteringHeartbeat}), so no other run rolls it back as abandoned while it is alive.
 *   <li>When one file group's work fails, Hudi's {@code FutureUtils.allOf} cancels the others
 *       and, by a race in Hudi 1.1 (fixed upstream in apache/hudi#18456), may complete with a
 *       sibling's {@code CancellationException} instead of the failure: the soak's clustering
 *       failures said only that. Each group's future records its own failure here, and a
 *       cancellation is replaced by the first real failure, so the error says what failed.
 *   <li>With {@code freshness.clustering.fail_after_write=true} in the executing writer's
 *       configuration (fault injection, faults.py) it writes the new files and then fails before
 *       the replacecommit completes: the worst moment, which leaves an inflight clustering with
 *       partial files for the next run to roll back and redo.
 *   <li>With {@code freshness.clustering.hold_ms=N} it holds its driver for N ms before the
 *       commit (tests: a clustering seen while it executes).
 * </ul>
 */
public class FaultInjectingClusteringExecutionStrategy<T> extends SparkSortAndSizeExecutionStrategy<T> {

  public static final String FAIL_KEY = "freshness.clustering.fail_after_write";
  public static final String HOLD_KEY = "freshness.clustering.hold_ms";
  private static final Logger LOG =
      LoggerFactory.getLogger(FaultInjectingClusteringExecutionStrategy.class);

  private final AtomicReference<Throwable> firstGroupFailure = new AtomicReference<>();

  public FaultInjectingClusteringExecutionStrategy(
      HoodieTable table, HoodieEngineContext engineContext, HoodieWriteConfig writeConfig) {
    super(table, engineContext, writeConfig);
  }

  @Override
  public HoodieWriteMetadata performClustering(
      HoodieClusteringPlan plan, Schema schema, String instantTime) {
    HoodieTableMetaClient meta = getHoodieTable().getMetaClient();
    ClusteringHeartbeat.start(
        meta.getStorage(), meta.getBasePath().toString(), instantTime, Thread.currentThread());
    firstGroupFailure.set(null);
    HoodieWriteMetadata result;
    try {
      result = super.performClustering(plan, schema, instantTime);
    } catch (RuntimeException e) {
      Throwable cause = firstGroupFailure.get();
      if (cause == null || !isCancellation(e)) {
        throw e;
      }
      HoodieClusteringException real = new HoodieClusteringException(
          "clustering " + instantTime + " failed in a file group: " + cause, cause);
      real.addSuppressed(e);
      throw real;
    }
    long holdMs = Long.parseLong(getWriteConfig().getStringOrDefault(HOLD_KEY, "0"));
    if (holdMs > 0) {
      try {
        Thread.sleep(holdMs);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        throw new HoodieClusteringException("clustering " + instantTime + " interrupted", e);
      }
    }
    if (Boolean.parseBoolean(getWriteConfig().getStringOrDefault(FAIL_KEY, "false"))) {
      long written = ((HoodieData<?>) result.getWriteStatuses()).count();
      throw new HoodieClusteringException(
          "injected fault: clustering " + instantTime + " wrote " + written
              + " file(s) and fails before its replacecommit");
    }
    return result;
  }

  @Override
  protected CompletableFuture<HoodieData<WriteStatus>> runClusteringForGroupAsyncAsRow(
      HoodieClusteringGroup group,
      Map<String, String> strategyParams,
      boolean shouldPreserveHoodieMetadata,
      String instantTime,
      ExecutorService executor) {
    return recorded(super.runClusteringForGroupAsyncAsRow(
        group, strategyParams, shouldPreserveHoodieMetadata, instantTime, executor), group);
  }

  @Override
  protected CompletableFuture<HoodieData<WriteStatus>> runClusteringForGroupAsync(
      HoodieClusteringGroup group,
      Map<String, String> strategyParams,
      boolean shouldPreserveHoodieMetadata,
      String instantTime,
      ExecutorService executor) {
    return recorded(super.runClusteringForGroupAsync(
        group, strategyParams, shouldPreserveHoodieMetadata, instantTime, executor), group);
  }

  /** The group's future, which first records its own failure (not a cancellation). */
  private CompletableFuture<HoodieData<WriteStatus>> recorded(
      CompletableFuture<HoodieData<WriteStatus>> future, HoodieClusteringGroup group) {
    return future.whenComplete((statuses, failure) -> {
      if (failure != null && !isCancellation(failure)) {
        Throwable cause = failure instanceof CompletionException && failure.getCause() != null
            ? failure.getCause() : failure;
        if (firstGroupFailure.compareAndSet(null, cause)) {
          LOG.error("clustering group of " + group.getSlices().size() + " file(s) failed", cause);
        }
      }
    });
  }

  private static boolean isCancellation(Throwable failure) {
    for (Throwable t = failure; t != null; t = t.getCause()) {
      if (t instanceof CancellationException) {
        return true;
      }
    }
    return false;
  }
}
