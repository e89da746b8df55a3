package io.freshness.hudi;

import java.io.IOException;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.stream.Collectors;
import java.util.Objects;
import java.util.stream.Stream;

import org.apache.hudi.client.transaction.ConcurrentOperation;
import org.apache.hudi.client.transaction.SimpleConcurrentFileWritesConflictResolutionStrategy;
import org.apache.hudi.common.model.HoodieCommitMetadata;
import org.apache.hudi.common.table.HoodieTableMetaClient;
import org.apache.hudi.common.table.timeline.HoodieInstant;
import org.apache.hudi.common.table.timeline.HoodieTimeline;
import org.apache.hudi.common.util.Option;
import org.apache.hudi.exception.HoodieWriteConflictException;
import org.apache.hudi.table.HoodieTable;

/**
 * A stale plan never commits.
 *
 * <p>A freshness job run plans from its target's watermark t_done, computes rows for arrivals in
 * (t_done, u] and commits them with watermark u. If another run committed in between (a hand
 * materialize beside a sensor run, a replayed config), committing would count that window twice.
 * Hudi calls this strategy under the table's write lock, after the data files are written and
 * before the commit completes, so the check and the commit are one atomic step: the run commits
 * only if the table's current watermark (the newest completed commit carrying
 * {@code freshness.watermark_us}) is still the {@code freshness.t_done_before_us} the run wrote in
 * its own extra metadata. Otherwise it fails with a {@link HoodieWriteConflictException} whose
 * message starts with {@code STALE_PLAN}, and Hudi rolls the write back.
 *
 * <p>Commits without {@code freshness.t_done_before_us} (ingestion, table services) get Hudi's
 * usual file-level check, which this strategy also applies to job runs.
 */
public class WatermarkConflictResolutionStrategy
    extends SimpleConcurrentFileWritesConflictResolutionStrategy {

  public static final String WATERMARK_KEY = "freshness.watermark_us";
  public static final String T_DONE_BEFORE_KEY = "freshness.t_done_before_us";

  private String watermarkInstantTime;
  private String currentWatermark;
  // Instants Hudi's own strategy proposed (completed since this write started): only these
  // get its file-level check; the watermark instant may be older than this write.
  private final Set<String> concurrentInstantTimes = new HashSet<>();

  @Override
  public Stream<HoodieInstant> getCandidateInstants(
      HoodieTableMetaClient metaClient,
      HoodieInstant currentInstant,
      Option<HoodieInstant> lastSuccessfulInstant) {
    List<HoodieInstant> concurrent =
        super.getCandidateInstants(metaClient, currentInstant, lastSuccessfulInstant)
            .collect(Collectors.toList());
    concurrentInstantTimes.clear();
    concurrent.forEach(i -> concurrentInstantTimes.add(i.requestedTime()));
    watermarkInstantTime = null;
    currentWatermark = null;
    HoodieInstant latest = latestWatermarkInstant(metaClient);
    if (latest == null) {
      return concurrent.stream();
    }
    // Always examined, even when it completed before this write started: the plan was made
    // earlier still, from whatever watermark was current then.
    return Stream.concat(Stream.of(latest), concurrent.stream().filter(i -> !i.equals(latest)));
  }

  private HoodieInstant latestWatermarkInstant(HoodieTableMetaClient metaClient) {
    HoodieTimeline completed =
        metaClient.reloadActiveTimeline().getCommitsTimeline().filterCompletedInstants();
    return completed
        .getReverseOrderedInstantsByCompletionTime()
        .filter(instant -> watermarkOf(completed, instant) != null)
        .findFirst()
        .orElse(null);
  }

  private String watermarkOf(HoodieTimeline timeline, HoodieInstant instant) {
    try {
      Map<String, String> extra = timeline.readCommitMetadata(instant).getExtraMetadata();
      String value = extra == null ? null : extra.get(WATERMARK_KEY);
      if (value != null) {
        watermarkInstantTime = instant.requestedTime();
        currentWatermark = value;
      }
      return value;
    } catch (IOException e) {
      throw new HoodieWriteConflictException("cannot read commit metadata of " + instant, e);
    }
  }

  private static String plannedFrom(ConcurrentOperation operation) {
    Option<HoodieCommitMetadata> metadata = operation.getCommitMetadataOption();
    if (!metadata.isPresent() || metadata.get().getExtraMetadata() == null) {
      return null;
    }
    return metadata.get().getExtraMetadata().get(T_DONE_BEFORE_KEY);
  }

  private boolean isWatermarkInstant(ConcurrentOperation other) {
    return watermarkInstantTime != null && watermarkInstantTime.equals(other.getInstantTimestamp());
  }

  @Override
  public boolean hasConflict(ConcurrentOperation thisOperation, ConcurrentOperation otherOperation) {
    String planned = plannedFrom(thisOperation);
    if (planned != null && isWatermarkInstant(otherOperation)) {
      // An empty t_done_before means the run planned on a table with no watermark yet.
      String expected = planned.isEmpty() ? null : planned;
      if (!Objects.equals(expected, currentWatermark)) {
        return true;
      }
    }
    return concurrentInstantTimes.contains(otherOperation.getInstantTimestamp())
        && super.hasConflict(thisOperation, otherOperation);
  }

  @Override
  public Option<HoodieCommitMetadata> resolveConflict(
      HoodieTable table, ConcurrentOperation thisOperation, ConcurrentOperation otherOperation) {
    String planned = plannedFrom(thisOperation);
    if (planned != null && isWatermarkInstant(otherOperation)) {
      String expected = planned.isEmpty() ? null : planned;
      if (!Objects.equals(expected, currentWatermark)) {
        throw new HoodieWriteConflictException(
            "STALE_PLAN: run planned from t_done_us="
                + (expected == null ? "none" : expected)
                + " but the table's watermark is now "
                + currentWatermark
                + " (commit "
                + watermarkInstantTime
                + "); not committing, so no window is counted twice");
      }
    }
    return super.resolveConflict(table, thisOperation, otherOperation);
  }
}
