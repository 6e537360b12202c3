# deepcopy: the grad is copied too, a list holding one tensor twice, views copied together, a module
import copy
w = torch.ones(2, requires_grad=True)
(w * 2).sum().backward()
w2 = copy.deepcopy(w)
# plain: assert w2.grad is not None and w2.grad.tolist() == [2.0, 2.0] and w2.grad is not w.grad
# plain: assert w2._version == 1 and w2.is_leaf and w2.requires_grad
xs = [w, w]
ys = copy.deepcopy(xs)
# plain: assert ys[0] is ys[1] and ys[0] is not w
a = torch.arange(4.0)
vs = copy.deepcopy([a, a[1:]])
# plain: assert vs[0].untyped_storage().data_ptr() == vs[1].untyped_storage().data_ptr()
# plain: assert not shares_counter(vs[0], vs[1])
model = torch.nn.Linear(2, 1)
m2 = copy.deepcopy(model)
# plain: assert m2.weight is not model.weight and torch.equal(m2.weight, model.weight)
# plain: assert m2.weight.untyped_storage().data_ptr() != model.weight.untyped_storage().data_ptr()
