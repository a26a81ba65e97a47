"""Videos of a policy's episodes: rendered offscreen, captioned, written as ``.mp4`` or ``.gif``.

Rendering runs the episodes of a :class:`~rp1.realenv.snapshots.EvaluationEpisodes` again in environments made with
``render_mode="rgb_array"`` (:func:`render_episodes`), through the same evaluation code as the run
(:meth:`~rp1.realenv.snapshots.PolicySnapshot.evaluate`): a pass of its own, so rendering never touches
the episodes whose returns are reported. A frame is drawn after the reset and after every step, so
an episode of ``T`` steps has ``T + 1`` frames ``[height, width, 3]`` (uint8).

MuJoCo renders offscreen through ``MUJOCO_GL``: where neither ``MUJOCO_GL`` nor ``DISPLAY`` is set,
:func:`use_offscreen_gl` sets ``MUJOCO_GL=egl`` (Mesa's EGL; no display needed). ``.mp4`` needs
imageio-ffmpeg (its wheel ships ffmpeg), ``.gif`` and the captions Pillow: ``pip install
"ready-policy-one[video]"``.

Example::

    with VideoFile(Path("best.mp4"), fps=20, size=(320, 240)) as video:
        render_episodes(policy, replay, (320, 240), lambda k, frames: video.add_all(frames))
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import subprocess
import sys
import tempfile
import threading
import warnings
from collections.abc import Callable, Iterator
from io import BytesIO
from pathlib import Path
from typing import Any, SupportsFloat

import gymnasium as gym
import numpy as np

from rp1 import envs
from rp1.core.errors import ConfigError, RenderError, StorageError
from rp1.core.signals import TEMPORARY
from rp1.core.storage import check_writable_dir, write_atomically
from rp1.realenv.snapshots import EvaluationEpisodes
from rp1.rundir.policy_files import TrainedPolicy

SUFFIXES = (".mp4", ".gif")
DEFAULT_SIZE = (320, 240)  # width, height
MAX_SIDE = 4096
"""The largest width or height of a video, in pixels (4K; MuJoCo's offscreen buffer holds no more
on common OpenGL drivers)."""
PACKAGES = {".mp4": ("imageio_ffmpeg", "imageio-ffmpeg"), ".gif": ("PIL", "Pillow")}


# --- checks (before anything runs or is written) -----------------------------------------------


def parse_size(text: str) -> tuple[int, int]:
    """``"320x240"`` -> ``(320, 240)``; ConfigError unless two positive integers of at most
    :data:`MAX_SIDE`."""
    width, sep, height = text.lower().partition("x")
    try:
        size = (int(width), int(height))
    except ValueError:
        size = (0, 0)
    if not sep or min(size) < 1:
        raise ConfigError(f"--size expects WIDTHxHEIGHT in pixels, e.g. 320x240, got {text!r}")
    if max(size) > MAX_SIDE:
        raise ConfigError(f"--size {text}: width and height must be at most {MAX_SIDE} pixels")
    return size


def check_video(path: Path, size: tuple[int, int], option: str = "--video") -> None:
    """ConfigError unless ``path`` names a ``.mp4`` or ``.gif`` file that can be written (its
    directory exists or can be created, and is writable), the package it needs is installed, and
    ``size`` suits it (even sides for ``.mp4``). Touches nothing."""
    suffix = path.suffix.lower()
    if path.is_dir():
        raise ConfigError(f"{option} {path} is a directory; name a file")
    if suffix not in SUFFIXES:
        raise ConfigError(f"{option} {path}: the file must end in .mp4 or .gif")
    if path.exists() and not os.access(path, os.W_OK):
        raise ConfigError(f"{option} {path} is not writable")
    check_writable_dir(path.parent, option)
    check_packages(suffix)
    if suffix == ".mp4" and (size[0] % 2 or size[1] % 2):
        raise ConfigError(f"--size {size[0]}x{size[1]}: an .mp4 needs an even width and height")


def check_packages(suffix: str = ".mp4") -> None:
    """ConfigError naming the extra to install unless the packages for ``suffix`` (and captions) are there."""
    for module, package in {PACKAGES[suffix], PACKAGES[".gif"]}:
        if importlib.util.find_spec(module) is None:
            raise ConfigError(f'videos need {package}: pip install "ready-policy-one[video]"')


def use_offscreen_gl() -> None:
    """``MUJOCO_GL=egl`` where neither ``MUJOCO_GL`` nor ``DISPLAY`` is set (read when MuJoCo first renders)."""
    if not os.environ.get("MUJOCO_GL") and not os.environ.get("DISPLAY"):
        os.environ["MUJOCO_GL"] = "egl"


def check_rendering(task: str, horizon: int, size: tuple[int, int]) -> None:
    """Render one frame of ``task``: ConfigError if the task cannot render, :class:`RenderError`
    if the machine cannot (no OpenGL for ``MUJOCO_GL``)."""
    env = make_rendering_env(task, None, horizon, size)
    try:
        env.reset(seed=0)
        _render(env, task)
    finally:
        env.close()


def make_rendering_env(task: str, seed: int | None, horizon: int, size: tuple[int, int]) -> gym.Env:
    """The task's environment rendering ``size = (width, height)`` frames (:func:`rp1.envs.make`);
    a MuJoCo one films through a camera that follows its first body."""
    use_offscreen_gl()
    env = envs.make(task, seed, horizon, render=size)[0]
    _follow_first_body(env)
    return env


def _follow_first_body(env: gym.Env) -> None:
    """Gymnasium's MuJoCo environments film through a free camera that stays where an episode
    began (the runner soon leaves the picture); make it track body 1 (the torso of the
    locomotion tasks) at the environment's own distance and angles."""
    renderer = getattr(env.unwrapped, "mujoco_renderer", None)
    if renderer is None or renderer.camera_id not in (-1, None):  # not MuJoCo, or a camera chosen
        return
    import mujoco

    renderer.camera_id = None  # leaves the camera's type to the configuration below
    tracking = {"type": mujoco.mjtCamera.mjCAMERA_TRACKING, "trackbodyid": 1}
    renderer.default_cam_config = {**(renderer.default_cam_config or {}), **tracking}


def _render(env: gym.Env, task: str) -> np.ndarray:
    """``env.render()``; :class:`~rp1.core.errors.RenderError` naming ``MUJOCO_GL`` if OpenGL fails."""
    with _quiet_failed_viewers():  # the failed viewer is freed when the except block ends
        try:
            return np.asarray(env.render())
        except Exception as err:  # OpenGL: ImportError, AttributeError, RuntimeError, …
            if hasattr(env.unwrapped, "mujoco_renderer"):
                error: Exception = RenderError.of(
                    f"cannot render {task} offscreen", os.environ.get("MUJOCO_GL", "glfw"), err
                )
            else:
                error = ConfigError(f"task {task!r} cannot render ({type(err).__name__}: {err})")
    raise error


@contextlib.contextmanager
def _quiet_failed_viewers() -> Iterator[None]:
    """A Gymnasium viewer whose OpenGL context could not be made fails again when it is freed
    (``OffScreenViewer.__del__``); keep that second failure off stderr."""

    def hook(unraisable: sys.UnraisableHookArgs) -> None:
        if "Viewer.__del__" not in repr(unraisable.object):
            previous(unraisable)

    previous, sys.unraisablehook = sys.unraisablehook, hook
    try:
        yield
    finally:
        sys.unraisablehook = previous


# --- rendering ----------------------------------------------------------------------------------


class _EpisodeFrames(gym.Wrapper):
    """Records a frame after every reset and step; hands each finished episode to ``done(slot,
    frames)`` (an episode ends when it terminates or is truncated)."""

    def __init__(
        self, env: gym.Env, task: str, slot: int, done: Callable[[int, list[np.ndarray]], None]
    ) -> None:
        super().__init__(env)
        self.task, self.slot, self.done = task, slot, done
        self.frames: list[np.ndarray] = []

    def reset(self, **kwargs: Any) -> tuple[Any, dict[str, Any]]:
        result = self.env.reset(**kwargs)
        self.frames = [_render(self.env, self.task)]
        return result

    def step(self, action: Any) -> tuple[Any, SupportsFloat, bool, bool, dict[str, Any]]:
        result = self.env.step(action)
        self.frames.append(_render(self.env, self.task))
        if result[2] or result[3]:
            self.done(self.slot, self.frames)
            self.frames = []
        return result


def render_episodes(
    policy: TrainedPolicy,
    replay: EvaluationEpisodes,
    size: tuple[int, int],
    on_episode: Callable[[int, list[np.ndarray]], None],
) -> np.ndarray:
    """Run ``replay``'s episodes of ``policy`` again, rendering ``size = (width, height)`` frames:
    ``on_episode(k, frames)`` gets episode ``k``'s frames (``T_k + 1`` of ``[height, width, 3]``
    uint8), in order of ``k``. Returns the episodes' returns, as the evaluation computes them."""
    slots = replay.slots
    counts = [0] * slots  # episodes finished per slot
    pending: dict[int, list[np.ndarray]] = {}
    next_episode = 0

    def finished(slot: int, frames: list[np.ndarray]) -> None:
        nonlocal next_episode
        pending[counts[slot] * slots + slot] = frames  # round r of slot i is episode r·slots + i
        counts[slot] += 1
        while next_episode in pending:
            on_episode(next_episode, pending.pop(next_episode))
            next_episode += 1

    made: list[gym.Env] = []

    def make_env(task: str, seed: int | None, horizon: int) -> gym.Env:
        made.append(
            _EpisodeFrames(make_rendering_env(task, seed, horizon, size), task, len(made), finished)
        )
        return made[-1]

    real = replay.envs(policy.task, policy.horizon, make_env)
    try:
        return policy.snapshot.evaluate(real, replay)
    finally:
        real.close()


def caption(frame: np.ndarray, lines: list[str]) -> np.ndarray:
    """``frame`` with ``lines`` of text drawn in its top-left corner (white on a dark band)."""
    from PIL import Image, ImageDraw

    image = Image.fromarray(frame)
    draw = ImageDraw.Draw(image)
    height = 12 * len(lines) + 6
    draw.rectangle([0, 0, image.width, height], fill=(0, 0, 0))
    for i, line in enumerate(lines):
        draw.text((4, 3 + 12 * i), line, fill=(255, 255, 255))
    return np.asarray(image)


class VideoFile:
    """A video written frame by frame to ``path`` (``.mp4``: H.264 by imageio-ffmpeg's ffmpeg;
    ``.gif``: Pillow) at ``fps``; the file appears, atomically, when the ``with`` block ends without
    an error, and only if the encoder succeeded: otherwise a StorageError naming the file and the
    encoder's cause (a full temporary directory, …), and nothing is left behind (the encoder
    writes into a temporary folder, which an exit on a signal removes too, :data:`rp1.core.signals.TEMPORARY`)."""

    def __init__(self, path: Path, fps: float, size: tuple[int, int]) -> None:
        self.path, self.fps, self.size = Path(path), fps, size
        self.frames = 0
        self._gif: list[Any] = []
        self._tmp: tempfile.TemporaryDirectory | None = None
        self._ffmpeg: subprocess.Popen | None = None
        self._errors: list[bytes] = []

    def __enter__(self) -> VideoFile:
        if self.path.suffix.lower() == ".mp4":
            import imageio_ffmpeg

            self._tmp = tempfile.TemporaryDirectory(prefix="rp1-video-")
            TEMPORARY.add(self._tmp.name)
            # what imageio_ffmpeg.write_frames runs, with ffmpeg's errors and exit code kept
            command = [
                imageio_ffmpeg.get_ffmpeg_exe(),
                "-y",
                "-f",
                "rawvideo",
                "-vcodec",
                "rawvideo",
                "-s",
                f"{self.size[0]}x{self.size[1]}",
                "-pix_fmt",
                "rgb24",
                "-r",
                f"{self.fps:.2f}",
                "-i",
                "-",
                "-an",
                "-vcodec",
                "libx264",
                "-pix_fmt",
                "yuv420p",
                "-crf",
                "25",
                "-v",
                "error",
                str(Path(self._tmp.name) / "video.mp4"),
            ]
            with _starting_ffmpeg():
                self._ffmpeg = subprocess.Popen(
                    command,
                    stdin=subprocess.PIPE,
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.PIPE,
                )
            stderr = self._ffmpeg.stderr
            assert stderr is not None  # a pipe (stderr=PIPE)
            self._reader = threading.Thread(
                target=lambda: self._errors.append(stderr.read()), daemon=True
            )
            self._reader.start()
        return self

    def add(self, frame: np.ndarray) -> None:
        """Append one frame ``[height, width, 3]`` uint8."""
        if frame.shape != (self.size[1], self.size[0], 3):
            raise ValueError(
                f"frame of shape {frame.shape}, expected {(self.size[1], self.size[0], 3)}"
            )
        self.frames += 1
        if self._ffmpeg is not None:
            assert self._ffmpeg.stdin is not None  # a pipe (stdin=PIPE)
            with contextlib.suppress(BrokenPipeError):  # ffmpeg ended: __exit__ says why
                self._ffmpeg.stdin.write(np.ascontiguousarray(frame, np.uint8).tobytes())
        else:
            self._gif.append(_gif_frame(frame))

    def __exit__(self, kind: type | None, *exc: object) -> None:
        try:
            if self._ffmpeg is not None:
                self._finish_ffmpeg(kind is None)
                if kind is None:
                    assert self._tmp is not None  # made with the ffmpeg process
                    write_atomically(
                        self.path, (Path(self._tmp.name) / "video.mp4").read_bytes(), "video"
                    )
            elif kind is None and self._gif:
                write_atomically(self.path, _encode_gif(self._gif, self.fps), "video")
        finally:
            if self._tmp is not None:
                with contextlib.suppress(OSError):
                    self._tmp.cleanup()
                TEMPORARY.discard(self._tmp.name)

    def _finish_ffmpeg(self, complete: bool) -> None:
        """Let ffmpeg finish the file (``complete``) or stop it; StorageError naming the video and
        ffmpeg's last error line if it failed."""
        # ffmpeg runs (__enter__)
        assert self._ffmpeg is not None and self._ffmpeg.stdin is not None
        with contextlib.suppress(BrokenPipeError):
            self._ffmpeg.stdin.close()
        if not complete:
            self._ffmpeg.kill()
        code = self._ffmpeg.wait()
        self._reader.join()
        if complete and code != 0:
            lines = b"".join(self._errors).decode(errors="replace").strip().splitlines()
            cause = lines[-1] if lines else f"exit code {code}"
            raise StorageError(f"cannot write video {self.path}: ffmpeg failed ({cause})")


@contextlib.contextmanager
def _starting_ffmpeg() -> Iterator[None]:
    """Starting the ffmpeg process: without JAX's warning that forking a multithreaded process
    may deadlock (the child runs ffmpeg at once; nothing of this process runs in it)."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="os.fork", category=RuntimeWarning)
        yield


def gif_bytes(frames: list[np.ndarray], fps: float) -> bytes:
    """``frames`` as an animated GIF (what TensorBoard shows as a video)."""
    return _encode_gif([_gif_frame(f) for f in frames], fps)


def _gif_frame(frame: np.ndarray) -> Any:
    """``frame`` as a 256-colour Pillow image."""
    from PIL import Image

    return Image.fromarray(frame).quantize(dither=Image.Dither.NONE)


def _encode_gif(images: list[Any], fps: float) -> bytes:
    buffer = BytesIO()
    images[0].save(
        buffer,
        format="GIF",
        save_all=True,
        append_images=images[1:],
        duration=round(1000 / fps),
        loop=0,
    )
    return buffer.getvalue()


def read_video(path: Path) -> np.ndarray:
    """The frames of an ``.mp4`` or ``.gif`` file: ``[frames, height, width, 3]`` uint8."""
    if path.suffix.lower() == ".gif":
        from PIL import Image, ImageSequence

        with Image.open(path) as image:
            return np.stack([np.asarray(f.convert("RGB")) for f in ImageSequence.Iterator(image)])
    import imageio_ffmpeg

    reader = imageio_ffmpeg.read_frames(str(path))
    with _starting_ffmpeg():
        width, height = next(reader)["size"]
    return np.stack([np.frombuffer(f, np.uint8).reshape(height, width, 3) for f in reader])


def frame_rate(task: str) -> float:
    """Frames per second of ``task``'s videos: real time, one frame per step (``1 / dt``; 30 without ``dt``)."""
    env, spec = envs.make(task)
    env.close()
    return 1.0 / spec.dt if spec.dt > 0 else 30.0


def record(
    policy: TrainedPolicy,
    replay: EvaluationEpisodes,
    path: Path,
    size: tuple[int, int] = DEFAULT_SIZE,
    returns: np.ndarray | None = None,
    keep_frames: bool = False,
) -> list[np.ndarray]:
    """Write ``replay``'s episodes of ``policy`` to the video ``path`` (``.mp4`` or ``.gif``),
    ``size = (width, height)``, each frame captioned with the run, the policy and its episode's
    return: ``returns [episodes]``, default a pass of its own without rendering (so the caption
    holds the evaluation's number). Returns the captioned frames if ``keep_frames``, else ``[]``."""
    if returns is None:
        real = replay.envs(policy.task, policy.horizon)
        try:
            returns = policy.snapshot.evaluate(real, replay)
        finally:
            real.close()
    title = f"{policy.preset} seed {policy.seed} | {policy.which or 'trained'} policy | {policy.samples:,} samples"
    kept: list[np.ndarray] = []

    def add(k: int, frames: list[np.ndarray]) -> None:
        # the step makes every frame differ (a GIF merges equal ones)
        for t, frame in enumerate(frames):
            frame = caption(
                frame,
                [
                    title,
                    f"episode {k + 1}/{replay.episodes} | step {t} | return {float(returns[k]):.1f}",
                ],
            )
            video.add(frame)
            if keep_frames:
                kept.append(frame)

    with VideoFile(path, frame_rate(policy.task), size) as video:
        render_episodes(policy, replay, size, add)
    return kept
