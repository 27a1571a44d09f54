//! Prints chapter 2's training throughput, one line per repetition: `ours <tokens/s>`.
//! Usage: tinygpt-bench [steps per repetition] [repetitions]

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let steps: usize = args.next().map_or(Ok(20), |s| s.parse())?;
    let repeats: usize = args.next().map_or(Ok(5), |s| s.parse())?;
    for _ in 0..repeats {
        println!("ours {:.0}", ch02::benchmark_training(steps)?);
    }
    Ok(())
}
