"""grid_sample: input values read at the (x, y) places of a sampling grid, in [-1, 1]
coordinates, by bilinear interpolation or nearest neighbour. A gather of pijit ops, so
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


def _read(flat, row, col, height, width):
    """flat (N, C, H * W) at the integer places (row, col) of shape (N, L), zero outside the
    image: (N, C, L)."""
    inside = _ops.logical_and(_ops.logical_and(_ops.greater_equal(row, 0), _ops.less(row, height)),
                              _ops.logical_and(_ops.greater_equal(col, 0), _ops.less(col, width)))
    index = _ops.clamp(row, 0, height - 1) * width + _ops.clamp(col, 0, width - 1)
    index = _ops.broadcast_to(_ops.unsqueeze(index, 1), (flat.shape[0], flat.shape[1],
                                                         index.shape[-1]))
    values = _np_take_along_axis(flat, index, -1)
    return values * _ops.unsqueeze(inside, 1).astype(flat.dtype)


def grid_sample(input, grid, mode="bilinear", padding_mode="zeros", align_corners=False):  # noqa: A002
    """(N, C, H, W) input sampled at grid (N, Ho, Wo, 2) -> (N, C, Ho, Wo). grid[..., 0] is
    x (across W), grid[..., 1] is y (across H), both in [-1, 1]; places outside read zeros
    (padding_mode 'zeros') or the nearest edge ('border')."""
    fname = "grid_sample"
    check_tensor(fname, "input", input)
    check_tensor(fname, "grid", grid)
    check_choice(fname, "mode", mode, ("bilinear", "nearest"))
    check_choice(fname, "padding_mode", padding_mode, ("zeros", "border"))
    check_bool(fname, "align_corners", align_corners)
    if input.ndim != 4 or grid.ndim != 4 or grid.shape[-1] != 2 or grid.shape[0] != input.shape[0]:
        raise_error(ValueError, f"{fname}: expected input (N, C, H, W) and grid (N, Ho, Wo, 2), "
                                f"got {input.shape} and {grid.shape}")
    if not is_float(input) or not is_float(grid):
        raise_error(TypeError, f"{fname}: input and grid must be float Tensors")
    n, c, height, width = input.shape
    out_hw = grid.shape[1:3]
    flat = _ops.reshape(input, (n, c, height * width))
    x = _pixel(_ops.reshape(grid[..., 0], (n, -1)), width, align_corners, padding_mode)
    y = _pixel(_ops.reshape(grid[..., 1], (n, -1)), height, align_corners, padding_mode)
    if mode == "nearest":
        out = _read(flat, _ops.round(y).astype(int64), _ops.round(x).astype(int64),
                    height, width)
    else:
        x0, y0 = _ops.floor(x), _ops.floor(y)
        wx1, wy1 = _ops.unsqueeze(x - x0, 1), _ops.unsqueeze(y - y0, 1)
        wx0, wy0 = 1.0 - wx1, 1.0 - wy1
        col0, row0 = x0.astype(int64), y0.astype(int64)
        col1, row1 = col0 + 1, row0 + 1
        out = (_read(flat, row0, col0, height, width) * (wy0 * wx0)
               + _read(flat, row0, col1, height, width) * (wy0 * wx1)
               + _read(flat, row1, col0, height, width) * (wy1 * wx0)
               + _read(flat, row1, col1, height, width) * (wy1 * wx1))
    return _ops.reshape(out, (n, c) + tuple(out_hw))
