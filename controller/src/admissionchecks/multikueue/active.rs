//! MultiKueue AdmissionChecks: their `Active` condition.
