# numpy(): the array shares memory with the tensor, writes show on both sides
import torch

t = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
arr = t.detach().numpy()
arr[0] = 100.0
print(t)
ints_t = torch.arange(3)
ints_arr = ints_t.numpy()
ints_arr[1] = -1
print(ints_t)
copied = arr.copy()
copied[2] = 0.5
ints = torch.arange(4).numpy()
summed = arr.sum()
