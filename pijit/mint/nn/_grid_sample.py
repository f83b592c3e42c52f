"""grid_sample: input values read at the (x, y) or (x, y, z) places of a sampling grid, in
[-1, 1] coordinates, by bilinear (trilinear) interpolation or nearest neighbour. A gather of pijit ops, so
the gradient reaches both input and grid (through the interpolation weights)."""
from pijit import _C
from pijit._tensor import int64
from pijit.mint._checks import check_bool, check_choice, check_tensor, is_float, raise_error
from pijit.numpy.indexing import take_along_axis as _np_take_along_axis

_ops = _C.ops


def _pixel(coord, size, align_corners, padding_mode):
    """[-1, 1] grid coordinates as pixel coordinates along an axis of `size` pixels."""
    if align_corners:
        pos = (coord + 1.0) * (0.5 * (size - 1))
    else:
        pos = ((coord + 1.0) * size - 1.0) * 0.5
    if padding_mode == "border":
        pos = _ops.clamp(pos, 0.0, float(size - 1))
    return pos


def _read(flat, places, sizes):
    """flat (N, C, prod(sizes)) at the integer places (one (N, L) tensor per spatial axis, in
    axis order), zero outside: (N, C, L)."""
    inside, index = None, None
    for place, size in zip(places, sizes):
        ok = _ops.logical_and(_ops.greater_equal(place, 0), _ops.less(place, size))
        inside = ok if inside is None else _ops.logical_and(inside, ok)
        clamped = _ops.clamp(place, 0, size - 1)
        index = clamped if index is None else index * size + clamped
    index = _ops.broadcast_to(_ops.unsqueeze(index, 1), (flat.shape[0], flat.shape[1],
                                                         index.shape[-1]))
    values = _np_take_along_axis(flat, index, -1)
    return values * _ops.unsqueeze(inside, 1).astype(flat.dtype)


def grid_sample(input, grid, mode="bilinear", padding_mode="zeros", align_corners=False):  # noqa: A002
    """(N, C, H, W) input sampled at grid (N, Ho, Wo, 2) -> (N, C, Ho, Wo), or (N, C, D, H, W)
    at grid (N, Do, Ho, Wo, 3) -> (N, C, Do, Ho, Wo) (trilinear for mode 'bilinear').
    grid[..., 0] is x (across W), grid[..., 1] y (across H), grid[..., 2] z (across D), all
    in [-1, 1]; places outside read zeros (padding_mode 'zeros') or the nearest edge
    ('border')."""
    fname = "grid_sample"
    check_tensor(fname, "input", input)
    check_tensor(fname, "grid", grid)
    check_choice(fname, "mode", mode, ("bilinear", "nearest"))
    check_choice(fname, "padding_mode", padding_mode, ("zeros", "border"))
    check_bool(fname, "align_corners", align_corners)
    rank = input.ndim - 2
    if rank not in (2, 3) or grid.ndim != input.ndim or grid.shape[-1] != rank or \
            grid.shape[0] != input.shape[0]:
        raise_error(ValueError, f"{fname}: expected input (N, C, H, W) and grid (N, Ho, Wo, 2), "
                                f"or input (N, C, D, H, W) and grid (N, Do, Ho, Wo, 3), got "
                                f"{input.shape} and {grid.shape}")
    if not is_float(input) or not is_float(grid):
        raise_error(TypeError, f"{fname}: input and grid must be float Tensors")
    n, c = input.shape[:2]
    sizes = tuple(input.shape[2:])
    total = 1
    for size in sizes:
        total *= size
    flat = _ops.reshape(input, (n, c, total))
    # Spatial axis a (in D, H, W order) is read from grid component rank - 1 - a.
    coords = [_pixel(_ops.reshape(grid[..., rank - 1 - a], (n, -1)), sizes[a], align_corners,
                     padding_mode) for a in range(rank)]
    if mode == "nearest":
        out = _read(flat, [_ops.round(p).astype(int64) for p in coords], sizes)
    else:
        lows = [_ops.floor(p) for p in coords]
        fractions = [_ops.unsqueeze(p - lo, 1) for p, lo in zip(coords, lows)]
        lows = [lo.astype(int64) for lo in lows]
        out = None
        for corner in range(2 ** rank):
            bits = [(corner >> (rank - 1 - a)) & 1 for a in range(rank)]
            weight = None
            for a, bit in enumerate(bits):
                w = fractions[a] if bit else 1.0 - fractions[a]
                weight = w if weight is None else weight * w
            term = _read(flat, [lo + bit for lo, bit in zip(lows, bits)], sizes) * weight
            out = term if out is None else out + term
    return _ops.reshape(out, (n, c) + tuple(grid.shape[1:-1]))
