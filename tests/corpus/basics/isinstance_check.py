# isinstance(x, torch.Tensor) tells tensors from numbers
import torch

x = torch.ones(2)
is_tensor = isinstance(x, torch.Tensor)
is_number = isinstance(x.sum().item(), float)
print(is_tensor, is_number)
