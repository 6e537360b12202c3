# NumPy views of a tensor's memory: reshape and transpose share, astype and copy do not
import torch

t = torch.arange(6.0)
arr = t.numpy()
grid = arr.reshape(2, 3)
flipped = grid.T
as_int = arr.astype("int64")
tail = t[3:]
grid[0, 0] = -5.0
print(t, as_int)
