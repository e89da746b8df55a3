package io.freshness.hudi;

import java.io.IOException;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.stream.Collectors;
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
 * A commit that goes ahead only if what it was made from is still the table's newest: the
 * shared mechanism of the stale-plan guard (job runs, {@link WatermarkConflictResolutionStrategy})
 * and the checkpoint fence (ingestion, {@link CheckpointConflictResolutionStrategy}).
 *
 * <p>Hudi calls the strategy under the table's write lock, after the data files are written and
 * before the commit completes, so the check and the commit are one atomic step. A subclass names
 * the fence instant (the newest completed commit carrying what it checks, found in {@link
 * #fenceInstant}) and says why this commit must not go ahead against it ({@link #stale}); the
 * fence instant is always examined, even when it completed before this write started. Hudi's
 * usual file-level check applies to the instants it proposed itself.
 */
public abstract class FenceConflictResolutionStrategy
    extends SimpleConcurrentFileWritesConflictResolutionStrategy {

  // Instants Hudi's own strategy proposed (completed since this write started): only these
  // get its file-level check; the fence instant may be older than this write.
  private final Set<String> concurrentInstantTimes = new HashSet<>();
  private String fenceInstantTime;

  /** The newest completed commit this strategy checks against, or null; remembers its state. */
  protected abstract HoodieInstant fenceInstant(HoodieTimeline completed);

  /** Why this commit must not commit against the fence instant, or null. */
  protected abstract String stale(Map<String, String> thisExtra);

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
    HoodieTimeline completed =
        metaClient.reloadActiveTimeline().getCommitsTimeline().filterCompletedInstants();
    HoodieInstant fence = fenceInstant(completed);
    fenceInstantTime = fence == null ? null : fence.requestedTime();
    if (fence == null) {
      return concurrent.stream();
    }
    return Stream.concat(Stream.of(fence), concurrent.stream().filter(i -> !i.equals(fence)));
  }

  /** The newest completed instant of `completed` whose extra metadata has `key`, or null. */
  /**
   * Null when the commit was planned on the table's current value, else why it must not
   * commit: `said` + what it planned on ("none" for an empty value: a table without one
   * yet) + `now` + the current value and the commit that set it + what refusing keeps.
   */
  protected static String unlessCurrent(
      String planned, String current, String instant, String said, String now, String keeps) {
    String expected = planned.isEmpty() ? null : planned;
    if (Objects.equals(expected, current)) {
      return null;
    }
    return said
        + (expected == null ? "none" : expected)
        + now
        + current
        + " (commit "
        + instant
        + "); not committing, so "
        + keeps;
  }

  protected static HoodieInstant newestWith(HoodieTimeline completed, List<String> keys) {
    return completed
        .getReverseOrderedInstantsByCompletionTime()
        .filter(instant -> keys.stream().anyMatch(extraOf(completed, instant)::containsKey))
        .findFirst()
        .orElse(null);
  }

  protected static Map<String, String> extraOf(HoodieTimeline timeline, HoodieInstant instant) {
    try {
      Map<String, String> extra = timeline.readCommitMetadata(instant).getExtraMetadata();
      return extra == null ? Map.of() : extra;
    } catch (IOException e) {
      throw new HoodieWriteConflictException("cannot read commit metadata of " + instant, e);
    }
  }

  private String staleAgainst(ConcurrentOperation thisOperation, ConcurrentOperation other) {
    if (fenceInstantTime == null || !fenceInstantTime.equals(other.getInstantTimestamp())) {
      return null;
    }
    Option<HoodieCommitMetadata> metadata = thisOperation.getCommitMetadataOption();
    Map<String, String> extra =
        metadata.isPresent() && metadata.get().getExtraMetadata() != null
            ? metadata.get().getExtraMetadata()
            : Map.of();
    return stale(extra);
  }

  @Override
  public boolean hasConflict(ConcurrentOperation thisOperation, ConcurrentOperation otherOperation) {
    if (staleAgainst(thisOperation, otherOperation) != null) {
      return true;
    }
    return concurrentInstantTimes.contains(otherOperation.getInstantTimestamp())
        && super.hasConflict(thisOperation, otherOperation);
  }

  @Override
  public Option<HoodieCommitMetadata> resolveConflict(
      HoodieTable table, ConcurrentOperation thisOperation, ConcurrentOperation otherOperation) {
    String stale = staleAgainst(thisOperation, otherOperation);
    if (stale != null) {
      throw new HoodieWriteConflictException(stale);
    }
    return super.resolveConflict(table, thisOperation, otherOperation);
  }
}
