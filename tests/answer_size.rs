//! No answer is much larger than its request, in any chapter. An answer many times the
//! size of its request lets a few clients that send and never read hold gigabytes of a
//! server's memory: 4 MiB of short unknown argument names once got a failed tool result
//! of 19.5 MB (each name repeated, in full), and 60 such clients held 3.6 GB. Whatever
//! the request, the answer here must stay a few KiB.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

use mcp_workbook::chapters::CHAPTERS;

#[macro_use]
mod common;

/// The most an answer may take here, head included, whatever the request.
const MOST: usize = 4 * 1024;

/// Call `PingME` (which takes no arguments) with `arguments`, and read the whole answer.
fn call_ping_me(address: SocketAddr, arguments: &str) -> String {
    let body = format!(
        r#"{{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{{"name":"PingME","arguments":{{{arguments}}}}}}}"#
    );
    let mut stream = TcpStream::connect(address).unwrap();
    stream.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    let head = format!(
        "POST /mcp HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\nConnection: close\r\nContent-Length: {}\r\n\r\n",
        body.len()
    );
    stream.write_all(head.as_bytes()).unwrap();
    stream.write_all(body.as_bytes()).unwrap();
    let mut answer = Vec::new();
    stream.read_to_end(&mut answer).unwrap();
    String::from_utf8(answer).unwrap()
}

fn answers_stay_small(name: &str, binary: &str) {
    let chapter = CHAPTERS.iter().find(|c| c.name == name).unwrap();
    let server = common::start(binary, &[]);
    // About 1 MiB of short names the tool does not take: ~100,000 wrong arguments.
    let many: Vec<String> = (0..100_000).map(|i| format!(r#""{i:x}":0"#)).collect();
    // One name of 1 MiB.
    let long = format!(r#""{}":0"#, "n".repeat(1024 * 1024));
    for (what, arguments) in [("100,000 unknown arguments", many.join(",")), ("a name of 1 MiB", long)] {
        let answer = call_ping_me(server.address, &arguments);
        let start: String = answer.chars().take(400).collect();
        assert!(answer.len() <= MOST, "{name}, {what}: an answer of {} bytes: {start}…", answer.len());
        // From chapter 5 on, the answer is the failed result that lists the problems.
        if chapter.number >= 5 {
            assert!(answer.contains("is not an argument of this tool"), "{name}, {what}: {answer}");
        }
    }
    let answer = call_ping_me(server.address, &many[..7].join(","));
    if chapter.number >= 5 {
        assert!(answer.contains("; and 2 more. Correct the arguments"), "{name}: {answer}");
    }
}

/// One test per chapter, so that a failure names its chapter.
macro_rules! answer_size_tests {
    ($($(#[$gate:meta])* $test:ident => $name:literal),* $(,)?) => {
        $(
            $(#[$gate])*
            #[test]
            fn $test() {
                answers_stay_small($name, env!(concat!("CARGO_BIN_EXE_", $name)));
            }
        )*

        /// The tests above and `chapters::CHAPTERS` name the same chapters (those this
        /// build has).
        #[test]
        fn every_chapter_has_an_answer_size_test() {
            let tested: &[&str] = &[$($(#[$gate])* $name),*];
            let listed: Vec<&str> = CHAPTERS.iter().filter(|c| c.in_this_build()).map(|c| c.name).collect();
            assert_eq!(tested, listed);
        }
    };
}

every_chapter!(answer_size_tests);
