package io.freshness.hudi;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;

import org.apache.hudi.avro.model.HoodieClusteringGroup;
import org.apache.hudi.client.clustering.plan.strategy.SparkSizeBasedClusteringPlanStrategy;
import org.apache.hudi.common.engine.HoodieEngineContext;
import org.apache.hudi.common.model.FileSlice;
import org.apache.hudi.common.util.collection.Pair;
import org.apache.hudi.config.HoodieWriteConfig;
import org.apache.hudi.table.HoodieTable;

/**
 * A clustering plan of exactly the groups our decision chose (freshness_pipeline/scheduling/clustering.py).
 *
 * <p>Hudi's size-based strategy groups a partition's small files by size alone, so one group
 * can merge files whose arrival times lie hours apart. Our decision groups files in arrival
 * order within a time-span limit, from the arrival ranges in the commit metadata, and passes
 * the groups in {@code freshness.clustering.groups} as {@code partition:fid+fid;partition:...}.
 * This strategy plans those groups only, each into as many output files as its size needs.
 * A named file group Hudi no longer offers (replaced meanwhile, or under another pending
 * clustering) is left out of its group; a group left with fewer than two files is dropped.
 */
public class ArrivalWindowClusteringPlanStrategy<T> extends SparkSizeBasedClusteringPlanStrategy<T> {

  public static final String GROUPS_KEY = "freshness.clustering.groups";

  private final Map<String, List<List<String>>> groupsByPartition = new HashMap<>();

  public ArrivalWindowClusteringPlanStrategy(
      HoodieTable table, HoodieEngineContext engineContext, HoodieWriteConfig writeConfig) {
    super(table, engineContext, writeConfig);
    String spec = writeConfig.getStringOrDefault(GROUPS_KEY, "");
    for (String group : spec.split(";")) {
      if (group.isEmpty()) {
        continue;
      }
      int colon = group.indexOf(':');
      if (colon < 0) {
        throw new IllegalArgumentException(GROUPS_KEY + ": " + group + " is not partition:fid+fid");
      }
      List<String> fileIds = List.of(group.substring(colon + 1).split("\\+"));
      groupsByPartition
          .computeIfAbsent(group.substring(0, colon), p -> new ArrayList<>())
          .add(fileIds);
    }
  }

  @Override
  protected Pair<Stream<HoodieClusteringGroup>, Boolean> buildClusteringGroupsForPartition(
      String partitionPath, List<FileSlice> fileSlices) {
    List<List<String>> wanted = groupsByPartition.getOrDefault(partitionPath, List.of());
    Map<String, FileSlice> offered = new HashMap<>();
    for (FileSlice slice : fileSlices) {
      offered.put(slice.getFileId(), slice);
    }
    long target = getWriteConfig().getClusteringTargetFileMaxBytes();
    List<HoodieClusteringGroup> groups = new ArrayList<>();
    for (List<String> fileIds : wanted) {
      List<FileSlice> slices = new ArrayList<>();
      long bytes = 0;
      for (String fileId : fileIds) {
        FileSlice slice = offered.get(fileId);
        if (slice != null) {
          slices.add(slice);
          bytes += slice.getBaseFile().map(f -> f.getFileSize()).orElse(0L);
        }
      }
      if (slices.size() < 2) {
        continue;
      }
      groups.add(
          HoodieClusteringGroup.newBuilder()
              .setSlices(getFileSliceInfo(slices))
              .setNumOutputFileGroups(getNumberOfOutputFileGroups(bytes, target))
              .setMetrics(buildMetrics(slices))
              .build());
    }
    return Pair.of(groups.stream(), true);
  }
}
