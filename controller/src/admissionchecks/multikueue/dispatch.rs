//! Which workers a workload is dispatched to: AllAtOnce, Incremental, External.
