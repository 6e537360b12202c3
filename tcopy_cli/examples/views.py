# Views and slices share storage
import torch

base = torch.arange(6.0)

# A slice is a view: same storage, different data_ptr (offset 2 elements).
tail = base[2:]

# reshape() of a contiguous tensor is a view too: no copy, same storage.
grid = base.reshape(2, 3)

# t() swaps strides without copying.
flipped = grid.t()

# Writing through one view changes every tensor on that storage.
tail[0] = 100.0
print(base)
