# Storage reads and what autograd saved: storage(), untyped_storage(), _saved_*, _is_view
import torch

a = torch.arange(6.0, requires_grad=True)
v = a[2:]
s = a.storage()
u = v.untyped_storage()
print(s.size(), s.nbytes(), s[3], len(s), s.dtype, u.nbytes(), u.element_size())
print(s.data_ptr() == a.data_ptr(), u.data_ptr() == a.data_ptr(), v.data_ptr() == a.data_ptr())
print(v._is_view(), a._is_view(), v._base is a, a._base)
b = a * a
print(b.grad_fn._saved_self is a, torch.equal(b.grad_fn._saved_other, a))
c = a.exp()
print(torch.equal(c.grad_fn._saved_result, c), c.grad_fn._saved_result is c)
c.sum().backward()
print(a.grad)
