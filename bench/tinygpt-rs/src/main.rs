//! Prints chapter 2's training throughput, one line per repetition: `ours <tokens/s>`.
//! Usage: tinygpt-bench [steps per repetition] [repetitions]
//!        tinygpt-bench --flops-per-token
//!        tinygpt-bench --peak [--shapes]
//!
//! `--flops-per-token` prints `flops_per_token <N>` instead: the matmul FLOPs of one
//! trained token of the measured configuration, counted by `ch02::flops_per_token` and
//! tripled for the backward pass as section 2.9 does, so that the benchmark's summary
//! converts tokens/s to FLOP/s with the chapter's own count.
//!
//! `--peak` prints `peak <GFLOP/s>`: the matmul roofline of a training step on this
//! machine, now. It records the matrix products one worker makes in a step of the
//! benchmark (`ch02::record_matmuls`), times each distinct one on every core at once, as
//! the trainer's workers run them, and adds up the best time of each: the time a step's
//! products take when nothing else runs. The step's FLOPs, as `--flops-per-token` counts
//! them, over that time is the peak; ours over it is the share of a step that the
//! products at their best would fill. `--shapes` adds a table of the products on stderr.

use std::sync::Barrier;
use std::time::Duration;

use ch02::{Batch, Gradients, MEASUREMENT_CONFIG, MatmulCall, Memory, Rng, TinyGpt};

/// The benchmark's batch, `ch02::benchmark_training`'s: 8 sequences of the full context.
const BATCH: usize = 8;
/// Each product is timed for about this long per trial, best of `TRIALS`.
const TRIAL: Duration = Duration::from_millis(4);
const TRIALS: usize = 5;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1).peekable();
    match args.peek().map(String::as_str) {
        Some("--flops-per-token") => {
            println!("flops_per_token {}", flops_per_token()?);
            return Ok(());
        }
        Some("--peak") => {
            args.next();
            return peak(args.next().as_deref() == Some("--shapes"));
        }
        _ => {}
    }
    let steps: usize = args.next().map_or(Ok(20), |s| s.parse())?;
    let repeats: usize = args.next().map_or(Ok(5), |s| s.parse())?;
    for _ in 0..repeats {
        println!("ours {:.0}", ch02::benchmark_training(steps)?);
    }
    Ok(())
}

/// Matmul FLOPs of one trained token, as section 2.9 counts them.
fn flops_per_token() -> Result<u64, ch02::GptError> {
    let config = MEASUREMENT_CONFIG;
    let forward = ch02::flops_per_token(&config, config.block_size)?.total;
    // Backward does two matmuls per forward one: a trained token costs three forwards.
    Ok(3 * forward)
}

fn peak(shapes: bool) -> Result<(), Box<dyn std::error::Error>> {
    let workers = std::thread::available_parallelism().map_or(1, |n| n.get());
    let seq = MEASUREMENT_CONFIG.block_size;
    // The trainer splits the batch evenly; the first worker's share is the largest.
    let share = BATCH.div_ceil(workers.min(BATCH));
    let calls = worker_matmuls(share, seq)?;
    let distinct = tally(&calls);
    let mut step_time = 0.0;
    if shapes {
        eprintln!(
            "{workers} workers of {share} x {seq} tokens, {} products each per step",
            calls.len()
        );
        eprintln!(
            "{:>5} {:>4} {:>4} {:>5} {:>7} {:>9}",
            "m", "n", "k", "calls", "GFLOP/s", "us/step"
        );
    }
    for (call, count) in &distinct {
        let seconds = best_time_on_all_cores(call, workers);
        step_time += seconds * *count as f64;
        if !shapes {
            continue;
        }
        eprintln!(
            "{:>5} {:>4} {:>4} {:>5} {:>7.0} {:>9.1}",
            call.m,
            call.n,
            call.k,
            count,
            call.flops() as f64 / seconds / 1e9 * workers as f64,
            seconds * *count as f64 * 1e6,
        );
    }
    let step_flops = (BATCH * seq) as f64 * flops_per_token()? as f64;
    let executed: u64 = calls.iter().map(MatmulCall::flops).sum();
    eprintln!(
        "a step's products at their best: {:.2} ms ({:.0} GFLOP/s executed on all cores; \
         the count charges {:.2}x the executed FLOPs)",
        step_time * 1e3,
        (executed * workers as u64) as f64 / step_time / 1e9,
        step_flops / (executed * workers as u64) as f64,
    );
    println!("peak {:.1}", step_flops / step_time / 1e9);
    Ok(())
}

/// The products of one worker's forward and backward pass on `batch` sequences, in order.
fn worker_matmuls(batch: usize, seq: usize) -> Result<Vec<MatmulCall>, ch02::GptError> {
    let model = TinyGpt::new(MEASUREMENT_CONFIG, 0)?;
    let mut rng = Rng::new(1);
    let mut random = || (0..batch * seq).map(|_| rng.below(256) as u32).collect();
    let batch = Batch::new(batch, seq, random(), random())?;
    let mut grads = Gradients::new(&model);
    let (tape, calls) = ch02::record_matmuls(|| {
        let tape = model.forward(&batch, Memory::KeepAll)?;
        model.backward(&tape, &mut grads);
        Ok::<_, ch02::GptError>(tape)
    });
    tape?;
    Ok(calls)
}

/// Each distinct call with the number of times it occurs, in order of first occurrence.
fn tally(calls: &[MatmulCall]) -> Vec<(MatmulCall, usize)> {
    let mut distinct: Vec<(MatmulCall, usize)> = Vec::new();
    for call in calls {
        match distinct.iter_mut().find(|(c, _)| c == call) {
            Some((_, count)) => *count += 1,
            None => distinct.push((*call, 1)),
        }
    }
    distinct
}

/// Seconds per call of `call` while `workers` threads make it at the same time, each on
/// its own buffers: the slowest thread's time, best of [`TRIALS`] trials.
fn best_time_on_all_cores(call: &MatmulCall, workers: usize) -> f64 {
    // Enough repetitions for a trial to last about `TRIAL`, judged from a first few.
    let probe = call.time(8).as_secs_f64() / 8.0;
    let reps = ((TRIAL.as_secs_f64() / probe.max(1e-9)) as usize).clamp(8, 100_000);
    let barrier = Barrier::new(workers);
    let mut best = f64::INFINITY;
    for _ in 0..TRIALS {
        let slowest = std::thread::scope(|scope| {
            let threads: Vec<_> = (0..workers)
                .map(|_| {
                    scope.spawn(|| {
                        barrier.wait();
                        call.time(reps)
                    })
                })
                .collect();
            threads
                .into_iter()
                .map(|t| t.join().expect("timing thread panicked"))
                .max()
        });
        let seconds = slowest.unwrap_or_default().as_secs_f64() / reps as f64;
        best = best.min(seconds);
    }
    best
}
