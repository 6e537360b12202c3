# clone: new memory, stays in the graph, gradients accumulate into the source
import torch

a = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
b = a.clone()
b_is_new_memory = b.data_ptr() != a.data_ptr()
print(b_is_new_memory, b.is_leaf, b.grad_fn)
c = (b * b).sum()
c.backward()
print(a.grad)
d = a.clone()
e = (d * 10).sum()
e.backward()
print(a.grad)
