# detach().numpy() still shares memory with the tensor
import torch

t = torch.zeros(3, requires_grad=True)

# numpy() needs detach() first; the array uses the tensor's memory.
arr = t.detach().numpy()

# Writing into the array changes the tensor.
arr[0] = 7.0
print(t)
