# nn.LazyLinear, Tensor.new(), torch.view_copy, torch.short and slice()
import torch
import torch.nn as nn

torch.manual_seed(0)
lin = nn.LazyLinear(3)
out = lin(torch.ones(2, 4))
print(lin.weight.shape, out.shape)
x = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
e = x.new(2, 3).zero_()
m = x.new([1.0, 5.0])
print(e.shape, e.dtype, m, m.requires_grad)
v = torch.view_copy(x, (3, 1))
print(v.shape, v.data_ptr() == x.data_ptr(), v.grad_fn.name())
s = torch.ones(2, dtype=torch.short)
first_two = slice(0, 2)
print(s.dtype, [1, 2, 3][first_two], x[first_two])
