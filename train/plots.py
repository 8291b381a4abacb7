"""Plots of a head-to-head run (``schedgym compare``), written beside its CSV as PNG and SVG.

``compare.png`` / ``compare.svg`` has two panels over the slots ``t`` of the episode:

1. cumulative reward per agent, mean over seeds with a 95% confidence band (Student t);
2. the ratio of each agent's cumulative reward to the best *classical* agent's (the classical
   agent with the highest mean return), computed per seed on the same episode (common random
   numbers) and then averaged, with its 95% band. Learned agents (``ppo:model.zip``) are dashed.

Legends keep what tells the agents apart (:func:`legend_labels`: the model paths' shared
folders and file name are dropped and named once above the legend).

``python -m schedgym.train.plots results/compare/GainOverhead-v0-paper-default [AGENT]``
redraws them from ``curves.npz`` (with ``AGENT`` as the ratio's reference instead of the best
classical agent). Also here: :func:`save_strip`, the image strip (and GIF) of ``compare --record``.
"""

from __future__ import annotations

import sys
import warnings
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from schedgym.agents.spec import AgentSpec, is_learned

__all__ = ["FrameSampler", "band", "best_classical", "curves_from_npz", "curves_from_results",
           "is_learned", "legend_labels", "plot_curves", "save_strip"]


def _stack(curves: Sequence[np.ndarray]) -> np.ndarray:
    """Curves of unequal length -> ``(n, max_len)``, each padded with its final value (an
    episode that ended earlier adds no more reward)."""
    n = max(len(c) for c in curves)
    out = np.empty((len(curves), n))
    for i, c in enumerate(curves):
        c = np.asarray(c, dtype=np.float64)
        out[i, : len(c)] = c
        out[i, len(c):] = c[-1] if len(c) else 0.0
    return out


def band(x: np.ndarray, level: float = 0.95) -> tuple[np.ndarray, np.ndarray]:
    """Mean over axis 0 and the Student-t half-width (0 for a single row); NaN-aware."""
    from scipy import stats

    n = np.sum(np.isfinite(x), axis=0)
    with np.errstate(invalid="ignore", divide="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # all-NaN columns: mean is NaN
        mean = np.nanmean(x, axis=0) if x.size else np.zeros(x.shape[1:])
        sd = np.nanstd(x, axis=0, ddof=1) if x.shape[0] > 1 else np.zeros(x.shape[1:])
        half = np.where(n > 1, stats.t.ppf(0.5 + level / 2, np.maximum(n - 1, 1)) * sd
                        / np.sqrt(np.maximum(n, 1)), 0.0)
    return mean, half


def best_classical(curves: Mapping[str, Mapping[Any, np.ndarray]]) -> str:
    """The classical agent with the highest mean return, leaving out clairvoyant benchmark
    agents such as FluctuatingSpeed's ``oracle`` (any agent if none qualifies)."""
    from schedgym.agents.registry import is_benchmark

    pool = [a for a in curves if not is_learned(a) and not is_benchmark(a)
            and AgentSpec.parse(a).key != "myopic-opt"] or list(curves)
    return max(pool, key=lambda a: np.mean([c[-1] if len(c) else 0.0
                                            for c in curves[a].values()]))


#: Longest legend label; a longer one keeps its two ends around an ellipsis.
MAX_LABEL = 48


def _shorten(text: str, limit: int = MAX_LABEL) -> str:
    """``text`` itself, or its first and last characters around ``…`` within ``limit``."""
    if len(text) <= limit:
        return text
    keep = (limit - 1) // 2
    return text[:keep] + "…" + text[-(limit - 1 - keep):]


def _fit(label: str, limit: int = MAX_LABEL) -> str:
    """``label`` within ``limit`` characters, its name and its ``[options]`` shortened apart
    (the options keep up to half the room, or what the name leaves), so neither is cut away."""
    if len(label) <= limit:
        return label
    head, bracket, opts = label.partition("[")
    tail = _shorten(bracket + opts, max(limit // 2, limit - len(head))) if bracket else ""
    return _shorten(head, limit - len(tail)) + tail


def _common_ends(paths: Sequence[tuple[str, ...]]) -> tuple[int, int]:
    """How many leading and trailing path parts every one of ``paths`` shares (never all of
    the shortest, so each keeps at least one part when they differ)."""
    shortest = min(len(p) for p in paths)
    lead = 0
    while lead < shortest and len({p[lead] for p in paths}) == 1:
        lead += 1
    trail = 0
    while trail < shortest - lead and len({p[-1 - trail] for p in paths}) == 1:
        trail += 1
    return lead, trail


def legend_labels(agents: Sequence[str]) -> tuple[dict[str, str], str]:
    """Each agent's legend label, and a note of what the labels of the learned agents leave
    out (``""`` when nothing is).

    Learned agents ``ALGO:path[opts]`` keep the part of their model paths that tells them apart:
    the path parts all of them share at the start and at the end are dropped
    (``ppo:runs/FS/entity_s0/model.zip`` and ``ppo:runs/FS/entity_s1/model.zip`` read
    ``ppo:entity_s0`` and ``ppo:entity_s1``; the note says ``models: runs/FS/*/model.zip``); one
    learned agent, or several of one model, read ``ALGO:…/run/model.zip[opts]``. Labels over
    :data:`MAX_LABEL` characters keep both ends. Where two labels would then read the same,
    the agents' full specs are the labels."""
    specs = {a: AgentSpec.parse(a) for a in agents}
    learned = [a for a in agents if specs[a].is_learned]
    paths = {a: Path(str(specs[a].path)).parts for a in learned}
    labels = {a: specs[a].short_label() for a in agents}
    note = ""
    if len(set(paths.values())) > 1:
        lead, trail = _common_ends(list(paths.values()))
        for a in learned:
            head, bracket, opts = specs[a].label.partition("[")
            algo = head.partition(":")[0]
            middle = paths[a][lead:len(paths[a]) - trail]
            labels[a] = f"{algo}:{'/'.join(middle)}{bracket}{opts}"
        if lead or trail:
            ref = paths[learned[0]]
            note = "models: " + "/".join([*ref[:lead], "*", *ref[len(ref) - trail:]])
    labels = {a: _fit(v) for a, v in labels.items()}
    if len(set(labels.values())) < len(labels):
        return {a: a for a in agents}, ""
    return labels, note


def plot_curves(curves: Mapping[str, Mapping[Any, np.ndarray]], out: str | Path,
                title: str = "", name: str = "compare", reference: str | None = None
                ) -> list[Path]:
    """Draw the two panels from ``{agent: {seed: cumulative reward per step}}``; returns the
    PNG and SVG paths written into the folder ``out``. ``reference``: the agent of the ratio
    panel (default :func:`best_classical`; pass one to leave out a clairvoyant benchmark agent
    such as FluctuatingSpeed's ``oracle``)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    if reference is not None and reference not in curves:
        raise ValueError(f"reference={reference!r} is invalid: must be one of "
                         f"{', '.join(curves)}")
    ref = reference or best_classical(curves)
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(12, 4.5))
    cmap = plt.get_cmap("tab10")
    labels, note = legend_labels(list(curves))
    for i, (agent, by_seed) in enumerate(curves.items()):
        seeds = sorted(by_seed)
        y = _stack([by_seed[s] for s in seeds])
        t = np.arange(1, y.shape[1] + 1)
        keep = _thin(y.shape[1])
        style = "--" if is_learned(agent) else "-"
        color = cmap(i % 10)
        m, h = (v[keep] for v in band(y))
        label = labels[agent]
        ax1.plot(t[keep], m, style, color=color, label=label, lw=1.5)
        ax1.fill_between(t[keep], m - h, m + h, color=color, alpha=0.2, lw=0)
        common = [s for s in seeds if s in curves[ref]]
        if not common:
            continue
        a = _stack([by_seed[s] for s in common])
        b = _stack([curves[ref][s] for s in common])
        n = min(a.shape[1], b.shape[1])
        with np.errstate(invalid="ignore", divide="ignore"):
            r = np.where(np.abs(b[:, :n]) > 0, a[:, :n] / b[:, :n], np.nan)
        k = _thin(n)
        rm, rh = (v[k] for v in band(r))
        ax2.plot(t[k], rm, style, color=color, lw=1.5,
                 label=f"{label}: {rm[-1]:.3f}" if np.isfinite(rm[-1]) else label)
        ax2.fill_between(t[k], rm - rh, rm + rh, color=color, alpha=0.2, lw=0)
    n_seeds = max(len(v) for v in curves.values())
    ax1.set_xlabel("slot / step t")
    ax1.set_ylabel("cumulative reward")
    ax1.set_title(f"cumulative reward (mean, 95% CI over {n_seeds} episodes)")
    ax1.legend(fontsize=8, title=_shorten(note, 2 * MAX_LABEL) or None, title_fontsize=7)
    ax2.set_xlabel("slot / step t")
    ax2.set_ylabel(f"cumulative reward / {ref}'s")
    ax2.set_title(f"ratio to the best classical agent ({ref})" if reference is None
                  else f"ratio to {ref}")
    ax2.axhline(1.0, color="grey", lw=0.8)
    ax2.legend(fontsize=8, title="final ratio", title_fontsize=8)
    ax2.set_ylim(*_ratio_limits(ax2))
    if title:
        fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    paths = [out / f"{name}.png", out / f"{name}.svg"]
    for p in paths:
        fig.savefig(p, dpi=120)
    plt.close(fig)
    return paths


def _thin(n: int, points: int = 400) -> np.ndarray:
    """Indices of at most ``points`` evenly spaced steps out of ``n``, always the first and last
    (keeps the SVG small; the curves are smooth at that resolution)."""
    return np.unique(np.linspace(0, n - 1, min(n, points)).round().astype(int))


def _ratio_limits(ax) -> tuple[float, float]:
    """Ignore the first few noisy slots when choosing the y range of the ratio panel."""
    vals = []
    for line in ax.get_lines():
        y = np.asarray(line.get_ydata(), dtype=np.float64)
        if y.size > 10:
            y = y[y.size // 10:]
        vals.append(y[np.isfinite(y)])
    v = np.concatenate(vals) if vals else np.array([1.0])
    if v.size == 0:
        return 0.0, 2.0
    lo, hi = float(v.min()), float(v.max())
    pad = 0.05 * max(hi - lo, 1e-3)
    return lo - pad, hi + pad


def curves_from_results(results: Sequence) -> dict[str, dict[Any, np.ndarray]]:
    """``EpisodeResult`` list -> ``{agent: {episode: curve}}`` (agent order kept); the episode
    is the seed, or ``(instance_seed, seed)`` when the results span several instances."""
    multi = len({getattr(r, "instance_seed", 0) for r in results}) > 1
    out: dict[str, dict[Any, np.ndarray]] = {}
    for r in results:
        key = (getattr(r, "instance_seed", 0), r.seed) if multi else r.seed
        out.setdefault(r.agent, {})[key] = r.curve
    return out


def curves_from_npz(path: str | Path) -> dict[str, dict[Any, np.ndarray]]:
    """Read ``curves.npz`` written by ``schedgym compare`` (keys ``"agent|instance_seed|seed"``,
    or ``"agent|seed"`` from older runs); episodes keyed as :func:`curves_from_results`."""
    parsed = []
    with np.load(path) as data:
        for key in data.files:
            head, _, seed = key.rpartition("|")
            agent, _, inst = head.rpartition("|")
            if not agent or not inst.isdigit():
                agent, inst = head, "0"
            parsed.append((agent, int(inst), int(seed), data[key]))
    multi = len({p[1] for p in parsed}) > 1
    out: dict[str, dict[Any, np.ndarray]] = {}
    for agent, inst, seed, curve in parsed:
        out.setdefault(agent, {})[(inst, seed) if multi else seed] = curve
    return out


def save_strip(frames: Sequence[tuple[int, np.ndarray]], path: str | Path, title: str = "",
               gif: bool = True) -> list[Path]:
    """Save ``[(step, rgb uint8 HxWx3), ...]`` as an image strip ``path`` (PNG) and (``gif``) an
    animated GIF beside it. Returns the paths written."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    n = len(frames)
    fig, axes = plt.subplots(1, n, figsize=(min(2.2 * n, 20), 2.8), squeeze=False)
    for ax, (step, img) in zip(axes[0], frames, strict=True):
        ax.imshow(img, interpolation="nearest", aspect="auto")
        ax.set_title(f"t={step}", fontsize=8)
        ax.set_xticks([])
        ax.set_yticks([])
    if title:
        fig.suptitle(title, fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    written = [path]
    if gif:
        from PIL import Image  # Pillow: a dependency of matplotlib

        imgs = [Image.fromarray(np.asarray(f, dtype=np.uint8)) for _, f in frames]
        g = path.with_suffix(".gif")
        imgs[0].save(g, save_all=True, append_images=imgs[1:], duration=400, loop=0)
        written.append(g)
    return written


class FrameSampler:
    """Keep about ``n`` evenly spaced frames of an episode of unknown length: keeps every
    ``stride``-th frame and doubles the stride (dropping every other kept frame) when full."""

    def __init__(self, n: int = 8) -> None:
        self.n = max(int(n), 1)
        self.stride = 1
        self.frames: list[tuple[int, np.ndarray]] = []

    def wants(self, step: int) -> bool:
        return step % self.stride == 0

    def add(self, step: int, frame: np.ndarray) -> None:
        self.frames.append((step, np.asarray(frame)))
        if len(self.frames) >= 2 * self.n:
            self.frames = self.frames[::2]
            self.stride *= 2

    def result(self, last: tuple[int, np.ndarray] | None = None) -> list[tuple[int, np.ndarray]]:
        """About ``n`` evenly spaced frames, ending with ``last`` (the final state) if given."""
        frames = list(self.frames)
        if last is not None and (not frames or frames[-1][0] != last[0]):
            frames.append(last)
        if len(frames) <= self.n:
            return frames
        idx = np.linspace(0, len(frames) - 1, self.n).round().astype(int)
        return [frames[i] for i in idx]


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) not in (1, 2):
        print("usage: python -m schedgym.train.plots RESULTS_DIR [REFERENCE_AGENT] "
              "(RESULTS_DIR holds curves.npz)", file=sys.stderr)
        return 2
    folder = Path(argv[0])
    ref = argv[1] if len(argv) == 2 else None
    for p in plot_curves(curves_from_npz(folder / "curves.npz"), folder, folder.name,
                         reference=ref):
        print(f"wrote {p}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
