//! Prints chapter 2's training throughput, one line per repetition: `ours <tokens/s>`.
//! Usage: tinygpt-bench [steps per repetition] [repetitions]
//!        tinygpt-bench --flops-per-token
//!        tinygpt-bench --peak [steps per repetition] [repetitions]
//!
//! `--flops-per-token` prints `flops_per_token <N>` instead: the matmul FLOPs of one
//! trained token of the measured configuration, counted by `ch02::flops_per_token` and
//! tripled for the backward pass as section 2.9 does, so that the benchmark's summary
//! converts tokens/s to FLOP/s with the chapter's own count.
//!
//! `--peak` measures the matmul roofline of a training step on this machine, now. It
//! records the matrix products one worker makes in a step of the benchmark
//! (`ch02::record_matmuls`) and gives every distinct product buffers of its own, laid out
//! as the originals were. Then, on every core at once, as the trainer's workers run:
//!
//! - `peak <GFLOP/s>`: each distinct product repeated back to back, its best time of a few
//!   trials, added up over the step: the step's products at their best, operands in cache.
//!   The step's FLOPs as `--flops-per-token` counts them, over that time, is the peak that
//!   `roofline:` divides by: each shape's peak weighted by its share of the step.
//! - `in_sequence <GFLOP/s>`, one per repetition: steps made of nothing but the products,
//!   in their order, on a pool of threads as the trainer's workers run, timed as
//!   `ch02::benchmark_training` times real steps. Here operands come and go from the
//!   caches as in a real step; the difference from `peak` is what that costs.

use std::sync::Barrier;
use std::time::{Duration, Instant};

use ch02::{
    Batch, Gradients, Job, MEASUREMENT_CONFIG, MatmulCall, MatmulOperands, Memory, Rng, TinyGpt,
    WorkerPool,
};

/// Large buffers on 2 MB pages, as chapter 2's section 2.10 explains: the step's and the
/// peak's alike, so that `roofline:` compares like with like.
#[global_allocator]
static ALLOC: ch02::LargePages = ch02::LargePages;

/// The benchmark's batch, `ch02::benchmark_training`'s: 8 sequences of the full context.
const BATCH: usize = 8;
/// Each distinct product is timed for about this long per trial, best of `TRIALS`.
const TRIAL: Duration = Duration::from_millis(3);
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
            let steps: usize = args.next().map_or(Ok(20), |s| s.parse())?;
            let repeats: usize = args.next().map_or(Ok(5), |s| s.parse())?;
            return peak(steps, repeats);
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

fn peak(steps: usize, repeats: usize) -> Result<(), Box<dyn std::error::Error>> {
    let workers = std::thread::available_parallelism().map_or(1, |n| n.get());
    let workers = workers.min(BATCH);
    let seq = MEASUREMENT_CONFIG.block_size;
    // The trainer splits the batch evenly; the first worker's share is the largest.
    let calls = worker_matmuls(BATCH.div_ceil(workers), seq)?;
    let step_flops = (BATCH * seq) as f64 * flops_per_token()? as f64;
    let mut replays: Vec<Replay> = (0..workers).map(|_| Replay::new(&calls)).collect();

    let mut best_step = 0.0;
    for (i, count) in replays[0].counts().into_iter().enumerate() {
        best_step += count as f64 * best_on_all_cores(&mut replays, i);
    }
    println!("peak {:.1}", step_flops / best_step / 1e9);

    let pool = WorkerPool::new(workers);
    for _ in 0..3 {
        matmul_step(&pool, &mut replays);
    }
    for _ in 0..repeats {
        let start = Instant::now();
        for _ in 0..steps {
            matmul_step(&pool, &mut replays);
        }
        let seconds = start.elapsed().as_secs_f64();
        println!(
            "in_sequence {:.1}",
            steps as f64 * step_flops / seconds / 1e9
        );
    }
    Ok(())
}

/// Seconds per call of distinct product `i` while every worker makes it at the same
/// time, back to back on its own buffers: the slowest worker's time, best of [`TRIALS`].
fn best_on_all_cores(replays: &mut [Replay], i: usize) -> f64 {
    // Enough repetitions for a trial to last about `TRIAL`, judged from a first few.
    let probe = Instant::now();
    (0..8).for_each(|_| replays[0].operands[i].run());
    let once = probe.elapsed().as_secs_f64() / 8.0;
    let reps = ((TRIAL.as_secs_f64() / once.max(1e-9)) as usize).clamp(8, 100_000);
    let barrier = Barrier::new(replays.len());
    let mut best = f64::INFINITY;
    for _ in 0..TRIALS {
        let slowest = std::thread::scope(|scope| {
            let threads: Vec<_> = replays
                .iter_mut()
                .map(|replay| {
                    let barrier = &barrier;
                    scope.spawn(move || {
                        barrier.wait();
                        let start = Instant::now();
                        (0..reps).for_each(|_| replay.operands[i].run());
                        start.elapsed()
                    })
                })
                .collect();
            threads
                .into_iter()
                .map(|t| t.join().expect("timing thread panicked"))
                .max()
        });
        best = best.min(slowest.unwrap_or_default().as_secs_f64() / reps as f64);
    }
    best
}

/// One worker's matrix products of a step, each distinct one with buffers of its own.
struct Replay {
    operands: Vec<MatmulOperands>,
    /// Which of `operands` each product of the step uses, in order.
    order: Vec<usize>,
}

impl Replay {
    fn new(calls: &[MatmulCall]) -> Self {
        let mut distinct: Vec<MatmulCall> = Vec::new();
        let order = calls
            .iter()
            .map(|call| {
                distinct.iter().position(|c| c == call).unwrap_or_else(|| {
                    distinct.push(*call);
                    distinct.len() - 1
                })
            })
            .collect();
        let operands = distinct.iter().map(MatmulCall::operands).collect();
        Replay { operands, order }
    }

    /// How often the step makes each distinct product.
    fn counts(&self) -> Vec<usize> {
        let mut counts = vec![0; self.operands.len()];
        self.order.iter().for_each(|&i| counts[i] += 1);
        counts
    }

    fn run(&mut self) {
        for &i in &self.order {
            self.operands[i].run();
        }
    }
}

/// A step of products alone, threaded as `ch02::Trainer::step` threads a real one: the
/// first worker on this thread, the others on the threads of a pool that lives from step
/// to step, all finished before the step ends.
fn matmul_step(pool: &WorkerPool, replays: &mut [Replay]) {
    let jobs = replays
        .iter_mut()
        .map(|replay| Box::new(|| replay.run()) as Job<'_>);
    pool.run(jobs.collect());
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
