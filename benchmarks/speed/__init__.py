"""Speed: search and ingest latency and throughput, cold start, embedding, enrichment, tracing and graph
costs, the PERF.md scale runs, and the mem0 comparison."""
