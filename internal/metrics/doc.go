// Package metrics owns depotfs's Prometheus collectors and the /metrics
// handler. Other packages feed it through narrow interfaces and never
// import the Prometheus client: mcpserver's calls arrive as their audit
// records (through the Auditor depotfs serve wraps), vfs reports each FUSE
// operation through vfs.OpObserver, and the store and the fetch broker are
// read at scrape time through the functions of Options, which return this
// package's own copies of their figures (StoreStats, FetchStats): a shared
// leaf package does not import the domain it measures.
//
// Labels are bounded: tool names, envelope error types, FUSE operation
// names and a few fixed words; never paths, identities or sessions.
//
// Everything here is safe for concurrent use. It must not block a call or
// a FUSE request: recording is a counter increment or a histogram
// observation.
package metrics
