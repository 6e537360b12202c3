# torch.as_tensor shares memory with a NumPy array; .copy() and a dtype change do not
import numpy as np
import torch

arr = np.zeros(3)
t = torch.as_tensor(arr)
arr[0] = 5.0
print(t)
snapshot = arr.copy()
ones = np.ones((2, 2))
t32 = torch.as_tensor(ones, dtype=torch.float32)
ones[1, 1] = 7.0
print(t32)
w = torch.tensor([1.0, 2.0], requires_grad=True)
back = w.detach().numpy().copy()
back[0] = -1.0
print(w, back[1])
grid = np.array([[1, 2], [3, 4]])
print(grid[:, 1], grid.shape)
