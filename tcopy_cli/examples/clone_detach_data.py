# clone, detach and .data side by side: memory, graph and version counter
import torch

x = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)

# clone(): new memory (a new storage label), still in the graph through CloneBackward0.
c = x.clone()

# detach(): x's own memory and x's version counter, but cut from the graph.
d = x.detach()

# .data: x's memory too, cut from the graph, but with a version counter of its own.
a = x.data

# z = x * x saves x for backward (dz/dx = 2x), at x's version 0.
z = (x * x).sum()

# Writing into the clone leaves x alone: x keeps its values and its version.
c.add_(10)

# Writing through .data changes x, yet x's version counter stays at 0...
a.mul_(2)

# ...so backward runs without a word on the changed x: 2x is now [4., 8., 12.], not [2., 4., 6.].
z.backward()
print(x.grad)

# Once more, but write through detach(): it bumps the version counter x shares.
x.grad = None
z = (x * x).sum()
d.mul_(2)

# Backward finds x saved at version 0 but now at version 1, and refuses: autograd noticed.
z.backward()  # expect: RuntimeError
