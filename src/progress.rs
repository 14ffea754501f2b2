//! Progress on a terminal: a bar on stderr while replays run, nothing when stderr is a pipe.

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

/// A progress bar over a known number of replays.
pub struct Progress {
    bar: ProgressBar,
}

impl Progress {
    /// A bar for `total` replays; hidden unless stderr is a terminal.
    pub fn new(total: u64) -> Self {
        Self::bar(total, "replays")
    }

    /// A bar for `total` things called `unit`, ticking on its own so that slow steps still show
    /// life; hidden unless stderr is a terminal.
    pub fn bar(total: u64, unit: &str) -> Self {
        let bar = ProgressBar::with_draw_target(Some(total), ProgressDrawTarget::stderr());
        bar.set_style(
            ProgressStyle::with_template(&format!(
                "{{spinner}} {{msg:32}} [{{bar:30}}] {{human_pos}}/{{human_len}} {unit}, {{eta}} left"
            ))
            .expect("template is valid")
            .progress_chars("=> "),
        );
        bar.enable_steady_tick(std::time::Duration::from_millis(200));
        Progress { bar }
    }

    /// A spinner counting operations of unknown total; hidden unless stderr is a terminal.
    pub fn spinner(label: String) -> Self {
        let bar = ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr());
        bar.set_style(
            ProgressStyle::with_template("{spinner} {msg:24} {human_pos} ops, {per_sec}")
                .expect("static template is valid"),
        );
        bar.set_message(label);
        bar.enable_steady_tick(std::time::Duration::from_millis(200));
        Progress { bar }
    }

    /// A callback that counts operations, for code that runs on other threads.
    pub fn counter(&self) -> std::sync::Arc<dyn Fn(u64) + Send + Sync> {
        let bar = self.bar.clone();
        std::sync::Arc::new(move |n| bar.inc(n))
    }

    /// Says what is being simulated now.
    pub fn set_message(&self, message: String) {
        self.bar.set_message(message);
    }

    /// Counts finished replays; callable from any thread.
    pub fn advance(&self, replays: u64) {
        self.bar.inc(replays);
    }

    /// Adds `n` to the total: work found only as it runs (the review trigger's search).
    pub fn grow(&self, n: u64) {
        self.bar.inc_length(n);
    }

    /// Prints a line on stderr above the bar (or alone, when the bar is hidden).
    pub fn println(&self, line: &str) {
        self.bar.suspend(|| eprintln!("{line}"));
    }

    /// Removes the bar.
    pub fn finish(&self) {
        self.bar.finish_and_clear();
    }
}
