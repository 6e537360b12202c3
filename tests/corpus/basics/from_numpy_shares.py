# torch.from_numpy of an array that views a tensor: both tensors use the same memory
import torch

t = torch.tensor([1.0, 2.0, 3.0])
arr = t.numpy()
back = torch.from_numpy(arr)
back[1] = -1.0
print(t, arr)
