# inspecting grad_fn nodes and their next_functions
import torch

x = torch.tensor([1.0, 2.0], requires_grad=True)
y = x.clone() * 2
print(y.grad_fn.name())
print(y.grad_fn.next_functions)
first = y.grad_fn.next_functions[0][0]
print(first.name(), first.next_functions)
