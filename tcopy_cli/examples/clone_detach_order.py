# clone().detach() versus detach().clone(): same result, different work
import torch

x = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)

# clone() first records a CloneBackward0 node, then detach() drops it.
a = x.clone().detach()

# detach() first, then clone() copies without ever touching the graph (the cheaper order).
b = x.detach().clone()

# Both are independent leaves in new memory: writing into them leaves x alone.
a.add_(10)
b.add_(20)
print(x)
