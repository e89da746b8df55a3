package io.freshness.hudi;

import org.apache.avro.Schema;
import org.apache.hudi.avro.model.HoodieClusteringPlan;
import org.apache.hudi.client.clustering.run.strategy.SparkSortAndSizeExecutionStrategy;
import org.apache.hudi.common.engine.HoodieEngineContext;
import org.apache.hudi.config.HoodieWriteConfig;
import org.apache.hudi.exception.HoodieClusteringException;
import org.apache.hudi.table.HoodieTable;
import org.apache.hudi.table.action.HoodieWriteMetadata;

/**
 * Hudi's sort-and-size clustering, which can be told to fail after writing its files.
 *
 * <p>The plan records its execution strategy, so every clustering plan we schedule names this
 * class; it behaves exactly as its parent unless the executing writer's configuration holds
 * {@code freshness.clustering.fail_after_write=true} (fault injection, faults.py), when it
 * writes the new files and then fails before the replacecommit completes: the worst moment, which
 * leaves an inflight clustering with partial files for the next run to roll back and redo.
 */
public class FaultInjectingClusteringExecutionStrategy<T> extends SparkSortAndSizeExecutionStrategy<T> {

  public static final String FAIL_KEY = "freshness.clustering.fail_after_write";

  public FaultInjectingClusteringExecutionStrategy(
      HoodieTable table, HoodieEngineContext engineContext, HoodieWriteConfig writeConfig) {
    super(table, engineContext, writeConfig);
  }

  @Override
  public HoodieWriteMetadata performClustering(
      HoodieClusteringPlan plan, Schema schema, String instantTime) {
    HoodieWriteMetadata result = super.performClustering(plan, schema, instantTime);
    if (Boolean.parseBoolean(getWriteConfig().getStringOrDefault(FAIL_KEY, "false"))) {
      long written = ((org.apache.hudi.common.data.HoodieData<?>) result.getWriteStatuses()).count();
      throw new HoodieClusteringException(
          "injected fault: clustering " + instantTime + " wrote " + written
              + " file(s) and fails before its replacecommit");
    }
    return result;
  }
}
