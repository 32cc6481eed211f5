/**
 * Sealing blocks at rest: AES-256-GCM under a key per namespace, derived from a master key ({@link
 * dev.kvcache.seal.MasterKeys}) and a random salt the namespace keeps beside its blocks, with the
 * namespace, the block's key and the master key's id bound as associated data ({@link
 * dev.kvcache.seal.Sealer}). Destroying a namespace's salt makes every block sealed under it
 * unreadable at once (crypto-shredding); a new master key id seals new blocks while the old ones
 * still open what they sealed (rotation).
 */
package dev.kvcache.seal;
