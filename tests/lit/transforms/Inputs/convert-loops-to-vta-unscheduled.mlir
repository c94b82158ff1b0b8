builtin.module {
  func.func @conv2d(%x: memref<1x2x4x1x16xi8>, %w: memref<1x1x1x1x16x16xi8>, %out: memref<1x4x6x1x16xi8> {loop.output}) attributes {loop.kernel} {
    %pad = memref.alloc() : memref<1x4x6x1x16xi8, #loop.scope<local>>
    loop.for %c = 0 to 1 axis "c" attributes {stage = "pad"} {
      loop.for %h = 0 to 4 axis "h" attributes {stage = "pad"} {
        loop.for %v = 0 to 6 axis "v" attributes {stage = "pad"} {
          loop.for %n = 0 to 1 axis "n" attributes {stage = "pad"} {
            loop.for %l = 0 to 16 axis "l" attributes {stage = "pad"} {
              %p = arith.constant 1 : index
              %hn = arith.constant 2 : index
              %wn = arith.constant 4 : index
              %zero = arith.constant 0 : index
              %hs = arith.subi %h, %p : index
              %vs = arith.subi %v, %p : index
              %h0 = arith.cmpi sge, %hs, %zero : index
              %h1 = arith.cmpi slt, %hs, %hn : index
              %v0 = arith.cmpi sge, %vs, %zero : index
              %v1 = arith.cmpi slt, %vs, %wn : index
              %hin = arith.andi %h0, %h1 : i1
              %vin = arith.andi %v0, %v1 : i1
              %in = arith.andi %hin, %vin : i1
              %hc = arith.select %hin, %hs, %zero : index
              %vc = arith.select %vin, %vs, %zero : index
              %e = memref.load %x[%c, %hc, %vc, %n, %l] : memref<1x2x4x1x16xi8>
              %z = arith.constant 0 : i8
              %r = arith.select %in, %e, %z : i8
              memref.store %r, %pad[%c, %h, %v, %n, %l] : memref<1x4x6x1x16xi8, #loop.scope<local>>
            }
          }
        }
      }
    }
    %acc = memref.alloc() : memref<1x4x6x1x16xi32, #loop.scope<local>>
    loop.for %o = 0 to 1 axis "o" attributes {stage = "conv", init} {
      loop.for %y = 0 to 4 axis "y" attributes {stage = "conv", init} {
        loop.for %q = 0 to 6 axis "q" attributes {stage = "conv", init} {
          loop.for %n_1 = 0 to 1 axis "n" attributes {stage = "conv", init} {
            loop.for %m = 0 to 16 axis "m" attributes {stage = "conv", init} {
              %init = arith.constant 0 : i32
              memref.store %init, %acc[%o, %y, %q, %n_1, %m] : memref<1x4x6x1x16xi32, #loop.scope<local>>
            }
          }
        }
      }
    }
    loop.for %o_1 = 0 to 1 axis "o" attributes {stage = "conv"} {
      loop.for %y_1 = 0 to 4 axis "y" attributes {stage = "conv"} {
        loop.for %q_1 = 0 to 6 axis "q" attributes {stage = "conv"} {
          loop.for %n_2 = 0 to 1 axis "n" attributes {stage = "conv"} {
            loop.for %m_1 = 0 to 16 axis "m" attributes {stage = "conv"} {
              loop.for %c_1 = 0 to 1 axis "c" attributes {stage = "conv", reduction} {
                loop.for %kh = 0 to 1 axis "kh" attributes {stage = "conv", reduction} {
                  loop.for %kw = 0 to 1 axis "kw" attributes {stage = "conv", reduction} {
                    loop.for %l_1 = 0 to 16 axis "l" attributes {stage = "conv", reduction} {
                      %s = arith.constant 1 : index
                      %ys = arith.muli %y_1, %s : index
                      %qs = arith.muli %q_1, %s : index
                      %yy = arith.addi %ys, %kh : index
                      %qq = arith.addi %qs, %kw : index
                      %a = memref.load %pad[%c_1, %yy, %qq, %n_2, %l_1] : memref<1x4x6x1x16xi8, #loop.scope<local>>
                      %k = memref.load %w[%o_1, %c_1, %kh, %kw, %m_1, %l_1] : memref<1x1x1x1x16x16xi8>
                      %a32 = arith.extsi %a : i8 to i32
                      %k32 = arith.extsi %k : i8 to i32
                      %prod = arith.muli %a32, %k32 : i32
                      %acc_1 = memref.load %acc[%o_1, %y_1, %q_1, %n_2, %m_1] : memref<1x4x6x1x16xi32, #loop.scope<local>>
                      %sum = arith.addi %acc_1, %prod : i32
                      memref.store %sum, %acc[%o_1, %y_1, %q_1, %n_2, %m_1] : memref<1x4x6x1x16xi32, #loop.scope<local>>
                    }
                  }
                }
              }
            }
          }
        }
      }
    }
    loop.for %o_2 = 0 to 1 axis "o" attributes {stage = "out"} {
      loop.for %y_2 = 0 to 4 axis "y" attributes {stage = "out"} {
        loop.for %q_2 = 0 to 6 axis "q" attributes {stage = "out"} {
          loop.for %n_3 = 0 to 1 axis "n" attributes {stage = "out"} {
            loop.for %m_2 = 0 to 16 axis "m" attributes {stage = "out"} {
              %v_1 = memref.load %acc[%o_2, %y_2, %q_2, %n_3, %m_2] : memref<1x4x6x1x16xi32, #loop.scope<local>>
              %shift = arith.constant 8 : i32
              %sh = arith.shrsi %v_1, %shift : i32
              %lo = arith.constant 0 : i32
              %hi = arith.constant 127 : i32
              %mx = arith.maxsi %sh, %lo : i32
              %mn = arith.minsi %mx, %hi : i32
              %t = arith.trunci %mn : i32 to i8
              memref.store %t, %out[%o_2, %y_2, %q_2, %n_3, %m_2] : memref<1x4x6x1x16xi8>
            }
          }
        }
      }
    }
    memref.dealloc %pad : memref<1x4x6x1x16xi8, #loop.scope<local>>
    memref.dealloc %acc : memref<1x4x6x1x16xi32, #loop.scope<local>>
    func.return
  }
}
