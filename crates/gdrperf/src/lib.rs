//! gdrperf core (being built).
