"""The bundle: a directory that any VTA simulator can run without strato.

    BUNDLE/insns.bin      the stream in issue order, 16 bytes an instruction (two little-endian
                          64-bit words)
    BUNDLE/<region>.npy   one per DRAM region the stream uses: uop (uint32 [n]), inp
                          ([n, BATCH, BLOCK_IN]), wgt ([n, BLOCK_OUT, BLOCK_IN]), acc (int32
                          [n, BATCH, BLOCK_OUT]), out ([n, BATCH, BLOCK_OUT], its initial contents)
    BUNDLE/manifest.json  {"config": {"LOG_INP_WIDTH": 3, ...},
                           "tensors": {NAME: {"region": "inp", "first_element": E,
                                              "shape": [N, C, H, W], "layout": "NCHW1n16c"}}}

An instruction's dram_base and x_stride count elements of the region of its memory type. A
tensor in NCHW{b}n{c}c occupies elements E .. E + N/b*C/c*H*W - 1 of its region in
(N/b, C/c, H, W) order; OIHW{o}o{i}i weights likewise in (O/o, I/i, KH, KW) order.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from strato.targets.vta.config import DEFAULT_CONFIG, VTAConfig
from strato.targets.vta.errors import VTAError
from strato.targets.vta.isa import Instruction, decode_stream, encode_stream
from strato.targets.vta.layout import (
    activation_elements,
    activation_layout,
    pack_activations,
    pack_weights,
    unpack_activations,
    unpack_weights,
    weight_elements,
    weight_layout,
)
from strato.targets.vta.simulator import check_dram, region_layout

INSNS_FILE = "insns.bin"
MANIFEST_FILE = "manifest.json"
REGION_NAMES = ("uop", "inp", "wgt", "acc", "out")


@dataclass(frozen=True)
class TensorPlacement:
    """Where a named tensor lives: its region, first element, logical shape and layout."""

    region: str
    first_element: int
    shape: tuple[int, ...]
    layout: str

    def to_json(self) -> dict[str, object]:
        return {
            "region": self.region,
            "first_element": self.first_element,
            "shape": list(self.shape),
            "layout": self.layout,
        }


@dataclass
class Bundle:
    """A stream, its DRAM image and the placement of its named tensors."""

    insns: list[Instruction]
    dram: dict[str, np.ndarray]
    config: VTAConfig = DEFAULT_CONFIG
    tensors: dict[str, TensorPlacement] = field(default_factory=dict)

    def tensor(self, name: str) -> np.ndarray:
        """A named tensor read back from its region in its logical (NCHW or OIHW) shape."""
        placement = self.tensors.get(name)
        if placement is None:
            raise VTAError(f"bundle has no tensor {name!r}")
        count = _element_count(name, placement, self.config)
        elems = self.dram[placement.region][placement.first_element : placement.first_element + count]
        if placement.layout == weight_layout(self.config):
            return unpack_weights(elems, placement.shape, self.config)
        return unpack_activations(elems, placement.shape, self.config)


class DramImage:
    """Lays named tensors out in the DRAM regions, one after another, for a bundle.

    >>> image = DramImage()
    >>> image.add_activations("x", np.zeros((1, 32, 2, 2), np.int8)).first_element
    0
    >>> image.add_activations("y", np.zeros((1, 16, 1, 3), np.int8)).first_element
    8
    >>> image.reserve_activations("out", (1, 16, 2, 2)).region, image.regions()["inp"].shape
    ('out', (11, 1, 16))
    """

    def __init__(self, config: VTAConfig = DEFAULT_CONFIG):
        self.config = config
        self.tensors: dict[str, TensorPlacement] = {}
        self._parts: dict[str, list[np.ndarray]] = {}
        self._sizes: dict[str, int] = {}

    def _append(
        self, name: str, region: str, elems: np.ndarray, shape: tuple[int, ...], layout: str
    ) -> TensorPlacement:
        if name in self.tensors:
            raise VTAError(f"tensor {name} is placed twice")
        first = self._sizes.get(region, 0)
        self._parts.setdefault(region, []).append(elems)
        self._sizes[region] = first + len(elems)
        placement = TensorPlacement(region, first, tuple(int(d) for d in shape), layout)
        self.tensors[name] = placement
        return placement

    def add_activations(self, name: str, x: np.ndarray, region: str = "inp") -> TensorPlacement:
        """An NCHW tensor in NCHW{BATCH}n{BLOCK}c, in region inp, acc or out."""
        if region not in ("inp", "acc", "out"):
            raise VTAError(f"tensor {name}: activations go to inp, acc or out, not {region}")
        dtype, _ = region_layout(self.config)[region]
        elems = pack_activations(np.asarray(x), self.config).astype(dtype, casting="same_kind")
        return self._append(name, region, elems, x.shape, activation_layout(self.config))

    def reserve_activations(self, name: str, shape: tuple[int, ...], region: str = "out") -> TensorPlacement:
        """Zero-filled room for an NCHW tensor (an output)."""
        dtype, _ = region_layout(self.config)[region]
        return self.add_activations(name, np.zeros(shape, dtype=dtype), region)

    def add_weights(self, name: str, w: np.ndarray) -> TensorPlacement:
        """OIHW weights in OIHW{BLOCK}o{BLOCK}i, in region wgt."""
        elems = pack_weights(np.asarray(w), self.config).astype(self.config.wgt_dtype, casting="same_kind")
        return self._append(name, "wgt", elems, w.shape, weight_layout(self.config))

    def regions(self) -> dict[str, np.ndarray]:
        """Each used region as one array (a copy; later additions do not show)."""
        return {region: np.concatenate(parts) for region, parts in self._parts.items()}


def _element_count(name: str, placement: TensorPlacement, config: VTAConfig) -> int:
    if len(placement.shape) != 4:
        raise VTAError(f"tensor {name}: shape {list(placement.shape)} is not 4-D")
    if placement.layout == activation_layout(config):
        n, c = placement.shape[:2]
        if n % config.batch or c % config.block_in:
            raise VTAError(f"tensor {name}: shape {list(placement.shape)} does not tile into {placement.layout}")
        return activation_elements(placement.shape, config)
    if placement.layout == weight_layout(config):
        o, i = placement.shape[:2]
        if o % config.block_out or i % config.block_in:
            raise VTAError(f"tensor {name}: shape {list(placement.shape)} does not tile into {placement.layout}")
        return weight_elements(placement.shape, config)
    raise VTAError(
        f"tensor {name}: layout {placement.layout!r} is not {activation_layout(config)} or {weight_layout(config)}"
    )


def _check_tensors(tensors: Mapping[str, TensorPlacement], dram: Mapping[str, np.ndarray], config: VTAConfig) -> None:
    for name, placement in tensors.items():
        if placement.region not in ("inp", "wgt", "acc", "out"):
            raise VTAError(f"tensor {name}: region {placement.region!r} is not inp, wgt, acc or out")
        if placement.region not in dram:
            raise VTAError(f"tensor {name}: region {placement.region} has no {placement.region}.npy")
        count = _element_count(name, placement, config)
        end = placement.first_element + count
        if placement.first_element < 0 or end > len(dram[placement.region]):
            raise VTAError(
                f"tensor {name}: elements {placement.first_element}..{end - 1} lie outside region "
                f"{placement.region} ({len(dram[placement.region])} elements)"
            )


def write_bundle(
    path: str | Path,
    insns: Sequence[Instruction],
    dram: Mapping[str, np.ndarray],
    config: VTAConfig = DEFAULT_CONFIG,
    tensors: Mapping[str, TensorPlacement] | None = None,
) -> Path:
    """Write `path/` (created if needed) and return it."""
    tensors = dict(tensors or {})
    check_dram(dram, config)
    _check_tensors(tensors, dram, config)
    directory = Path(path)
    directory.mkdir(parents=True, exist_ok=True)
    (directory / INSNS_FILE).write_bytes(encode_stream(insns, config))
    for name, array in dram.items():
        np.save(directory / f"{name}.npy", np.ascontiguousarray(array), allow_pickle=False)
    manifest = {"config": config.to_json(), "tensors": {name: p.to_json() for name, p in tensors.items()}}
    (directory / MANIFEST_FILE).write_text(json.dumps(manifest, indent=2) + "\n")
    return directory


def read_bundle(path: str | Path) -> Bundle:
    """Read a bundle directory; a missing or malformed part is a one-line `VTAError`."""
    directory = Path(path)
    if not directory.is_dir():
        raise VTAError("not a bundle directory", location=str(directory))
    try:
        manifest = json.loads((directory / MANIFEST_FILE).read_text())
        stream = (directory / INSNS_FILE).read_bytes()
    except FileNotFoundError as error:
        raise VTAError(f"bundle has no {Path(error.filename).name}", location=str(directory)) from None
    except json.JSONDecodeError as error:
        raise VTAError(f"{MANIFEST_FILE} is not JSON ({error.msg})", location=str(directory)) from None
    if not isinstance(manifest, dict) or not isinstance(manifest.get("config", {}), dict):
        raise VTAError(f"{MANIFEST_FILE} must hold an object with a config object", location=str(directory))
    config = VTAConfig.from_json(manifest.get("config", {}))
    insns = decode_stream(stream, config)
    dram: dict[str, np.ndarray] = {}
    for name in REGION_NAMES:
        file = directory / f"{name}.npy"
        if file.exists():
            try:
                dram[name] = np.load(file, allow_pickle=False)
            except ValueError as error:
                raise VTAError(f"{file.name} is not a numpy array ({error})", location=str(directory)) from None
    check_dram(dram, config)
    tensors = {}
    for name, entry in dict(manifest.get("tensors", {})).items():
        try:
            tensors[name] = TensorPlacement(
                region=str(entry["region"]),
                first_element=int(entry["first_element"]),
                shape=tuple(int(d) for d in entry["shape"]),
                layout=str(entry["layout"]),
            )
        except (KeyError, TypeError, ValueError):
            raise VTAError(
                f"{MANIFEST_FILE}: tensor {name} needs region, first_element, shape and layout",
                location=str(directory),
            ) from None
    _check_tensors(tensors, dram, config)
    return Bundle(insns, dram, config, tensors)
