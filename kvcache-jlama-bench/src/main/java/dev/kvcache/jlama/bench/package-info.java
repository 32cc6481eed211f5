/**
 * JMH benchmarks of a Jlama model's time to first token with its prompt's prefix loaded from
 * kvcache (RAM, disk with the page cache dropped, a kvcache-server in its own process) or
 * computed; models of random weights written by the run ({@code TestModels}).
 */
package dev.kvcache.jlama.bench;
