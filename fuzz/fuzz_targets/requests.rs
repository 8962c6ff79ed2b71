//! Any request to the whole server (router, query parameters, bodies of every content type):
//! no panic, no hang, and every failure a `Status` with the HTTP code (or one of the answers
//! kube-apiserver gives otherwise).
#![no_main]

use libfuzzer_sys::fuzz_target;
use tollgate_fuzz::{Request, runtime, send_checked, server};

fuzz_target!(|input: &[u8]| {
    let requests = Request::parse_all(input);
    if requests.is_empty() {
        return;
    }
    runtime().block_on(async {
        let server = server();
        for req in &requests {
            send_checked(&server, req).await;
        }
    });
});
