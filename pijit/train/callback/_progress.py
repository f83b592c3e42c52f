"""ProgressBar: one line per epoch, redrawn in place while training, when the output is a
terminal:

    epoch 2/5 [##########..........] 25/50 loss: 0.4127 183.2 steps/s ETA 0:00:02

Nothing is written when the output is not a terminal (a log file, a pipe, CI), where a line
redrawn with carriage returns would only add noise; use LossMonitor there."""
import sys
import time

from pijit.train.callback._callback import Callback, handle_loss

__all__ = ["ProgressBar"]


def _clock(seconds):
    seconds = int(round(seconds))
    return f"{seconds // 3600}:{seconds // 60 % 60:02d}:{seconds % 60:02d}"


class ProgressBar(Callback):
    """Shows the epoch, a bar of the steps done in it, the last loss, the steps per second and
    the estimated time left for the whole run, redrawn at most every `refresh` seconds (and
    at each epoch's last step). `stream` is where it writes (sys.stdout when None, looked up
    when training begins); it writes only when the stream is a terminal (isatty())."""

    def __init__(self, width=30, refresh=0.1, stream=None):
        super().__init__()
        if isinstance(width, bool) or not isinstance(width, int) or width < 1:
            raise ValueError(f"ProgressBar: 'width' must be an int >= 1, got {width!r}")
        if isinstance(refresh, bool) or not isinstance(refresh, (int, float)) or refresh < 0:
            raise ValueError(f"ProgressBar: 'refresh' must be a number >= 0, got {refresh!r}")
        self.width = width
        self.refresh = float(refresh)
        self._stream_given = stream
        self._stream = None
        self._last_draw = float("-inf")
        self._timed_from = None  # (time, steps done) the speed is measured from

    @staticmethod
    def _is_terminal(stream):
        isatty = getattr(stream, "isatty", None)
        try:
            return bool(isatty()) if callable(isatty) else False
        except (OSError, ValueError):  # a closed stream
            return False

    def on_train_begin(self, run_context):
        stream = self._stream_given if self._stream_given is not None else sys.stdout
        self._stream = stream if self._is_terminal(stream) else None
        self._timed_from = None

    def on_train_epoch_begin(self, run_context):
        self._last_draw = float("-inf")  # each epoch's first step is drawn

    def on_train_step_end(self, run_context):
        if self._stream is None:
            return
        cb_params = run_context.original_args()
        done = cb_params["cur_step_num"]
        now = time.perf_counter()
        if self._timed_from is None:
            # Measured from the end of the first step: it includes compiling the step.
            self._timed_from = (now, done)
        per_epoch = cb_params["batch_num"]
        step = (done - 1) % per_epoch + 1
        if step < per_epoch and now - self._last_draw < self.refresh:
            return
        self._last_draw = now
        self._draw(cb_params, step, per_epoch, done, now)

    def _draw(self, cb_params, step, per_epoch, done, now):
        start_time, start_done = self._timed_from
        elapsed = now - start_time
        rate = (done - start_done) / elapsed if elapsed > 0 and done > start_done else None
        total = cb_params["epoch_num"] * per_epoch
        filled = self.width * step // per_epoch
        loss = handle_loss(cb_params.get("net_outputs"))
        parts = [f"epoch {cb_params.get('cur_epoch_num', 1)}/{cb_params['epoch_num']}",
                 f"[{'#' * filled}{'.' * (self.width - filled)}]", f"{step}/{per_epoch}"]
        if isinstance(loss, float):
            parts.append(f"loss: {loss:.4f}")
        if rate:
            parts += [f"{rate:.1f} steps/s", f"ETA {_clock((total - done) / rate)}"]
        self._stream.write("\r" + " ".join(parts))
        self._stream.flush()

    def on_train_epoch_end(self, run_context):
        if self._stream is not None:
            self._stream.write("\n")
            self._stream.flush()
