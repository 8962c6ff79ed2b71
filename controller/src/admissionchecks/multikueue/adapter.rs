//! What the workload controller needs of a job kind: batch/v1 Job today.
