//! Integration tests of the fake API server, written against `kube::Api` and raw HTTP like a real
//! client would use them. One test binary (modules below) keeps link time down.

mod answer_check;
mod common;
mod crd;
mod crud;
mod deletion;
mod determinism;
mod dual;
mod envtest;
mod envtest_go;
mod faults;
mod fidelity;
mod fuzz_properties;
mod keep_alive;
mod kubectl;
mod load;
mod python_client;
mod runtime;
mod security;
mod tcp;
mod validation;
mod watch_fanout;
mod watch_list;
mod webhook_server;
mod webhooks;
