# numpy(): the array shares memory with the tensor both ways
import torch

t = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
arr = t.detach().numpy()
arr[0] = 100.0
print(t)
back = torch.from_numpy(arr)
back[1] = -1.0
print(arr)
copied = arr.copy()
copied[2] = 0.5
ints = torch.arange(4).numpy()
summed = arr.sum()
