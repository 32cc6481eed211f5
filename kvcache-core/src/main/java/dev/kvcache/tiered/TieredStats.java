package dev.kvcache.tiered;

/**
 * What a {@link TieredCache} did between its tiers; counters only grow over the cache's life.
 *
 * @param ramHits reads served by the RAM tier
 * @param spillHits reads served by a block on its way from RAM to the lower tier
 * @param lowerHits reads served by the lower tier
 * @param misses reads that found the block in no tier
 * @param spills blocks evicted from RAM and then written to the lower tier
 * @param spillsSkipped blocks evicted from RAM that the lower tier already held unchanged (promoted
 *     and not put since), or whose copy was on its way there, so nothing was written again
 * @param spillDrops blocks evicted from RAM that reached no tier: the spill queue was full, or the
 *     lower tier refused them
 * @param promotions blocks copied from the lower tier into RAM on a read
 * @param copies blocks written to the lower tier as they were put, behind or through the put
 *     ({@link Durability})
 * @param writeFailures writes to the lower tier (spills and copies) that it refused for lack of room
 *     (a full disk, a device whose writes fail) or that threw
 * @param failedCopies acknowledged blocks (written behind) whose copy the lower tier refused or
 *     failed to write and that only RAM holds now: a gauge, not a counter
 * @param notDurablePuts puts refused ({@link dev.kvcache.PutStatus#REJECTED_NOT_DURABLE}) because
 *     the lower tier's writes failed and the write-behind window was full of blocks only RAM holds
 */
public record TieredStats(
    long ramHits,
    long spillHits,
    long lowerHits,
    long misses,
    long spills,
    long spillsSkipped,
    long spillDrops,
    long promotions,
    long copies,
    long writeFailures,
    long failedCopies,
    long notDurablePuts) {}
