//! Prints chapter 2's training throughput, one line per repetition: `ours <tokens/s>`.
//! Usage: tinygpt-bench [steps per repetition] [repetitions]
//!        tinygpt-bench --flops-per-token
//!
//! `--flops-per-token` prints `flops_per_token <N>` instead: the matmul FLOPs of one
//! trained token of the measured configuration, counted by `ch02::flops_per_token` and
//! tripled for the backward pass as section 2.9 does, so that the benchmark's summary
//! converts tokens/s to FLOP/s with the chapter's own count.

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1).peekable();
    if args.peek().map(String::as_str) == Some("--flops-per-token") {
        let config = ch02::MEASUREMENT_CONFIG;
        let forward = ch02::flops_per_token(&config, config.block_size)?.total;
        // Backward does two matmuls per forward one: a trained token costs three forwards.
        println!("flops_per_token {}", 3 * forward);
        return Ok(());
    }
    let steps: usize = args.next().map_or(Ok(20), |s| s.parse())?;
    let repeats: usize = args.next().map_or(Ok(5), |s| s.parse())?;
    for _ in 0..repeats {
        println!("ours {:.0}", ch02::benchmark_training(steps)?);
    }
    Ok(())
}
