# clone(): new memory, but gradients still flow back to the source
import torch

# A leaf tensor that autograd tracks.
a = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)

# clone() copies the values into new memory (a new storage label)...
b = a.clone()

# ...but stays in the graph: b has a grad_fn that leads back to a.
loss = (b * b).sum()

# Backward sends d(loss)/db = 2*b through CloneBackward0 into a.grad.
loss.backward()

# Writing into b does not touch a: they no longer share memory.
with torch.no_grad():
    b[0] = 100.0
print(a)
print(b)
