# new_tensor and torch.tensor(t): independent copies, with a warning
import torch

a = torch.tensor([1.0, 2.0], requires_grad=True)

# Both copy the data into new memory with no autograd history; torch warns about it.
b = a.new_tensor(a)
c = torch.tensor(a)

# The explicit, warning-free spelling of the same thing.
d = a.clone().detach()
