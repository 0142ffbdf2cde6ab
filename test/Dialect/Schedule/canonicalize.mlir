// Canonicalization of schedule transfers: unused uploads and dead downloads (with their
// buffers) go; the upload a prefetch chunk waits behind, and downloads of losses and of
// buffers some upload reads, stay. The result must verify (rp-opt verifies after the pass).
// RUN: rp-opt %s -split-input-file --canonicalize | FileCheck %s

// Unused uploads: the second one ahead of the prefetch and the one after it are erased; in
// @B1 the unused upload is the only one ahead of the prefetch and stays.
// CHECK-LABEL: schedule.plan @uploads
// CHECK:      schedule.host_buffer @mask input "mask" : tensor<4xf32>
// CHECK:      schedule.stage @F0 forward layers [0, 1) {
// CHECK-NEXT:   schedule.await_weights
// CHECK-NEXT:   schedule.micro_batch {
// CHECK-NEXT:     %[[X:.+]] = schedule.upload @x : tensor<4xf32>
// CHECK-NEXT:     schedule.prefetch_next
// CHECK-NEXT:     %[[H:.+]] = schedule.call @a(%[[X]])
// CHECK-NEXT:     schedule.download %[[H]] to @h
// CHECK-NEXT:   }
// CHECK-NEXT: }
// CHECK:      schedule.stage @B1 backward layers [0, 1) {
// CHECK-NEXT:   schedule.await_weights
// CHECK-NEXT:   schedule.micro_batch {
// CHECK-NEXT:     schedule.upload @x : tensor<4xf32>
// CHECK-NEXT:     schedule.prefetch_next
// CHECK-NEXT:   }
func.func private @a(tensor<4xf32>) -> tensor<4xf32>
func.func private @b_vjp(tensor<4xf32>) -> (tensor<f32>, tensor<4xf32>)
schedule.plan @uploads micro_batches 2 gpus 1 update sync recompute stage dtype f32
    optimizer #schedule.adamw<lr = 1.0e-3, beta1 = 0.9, beta2 = 0.999, eps = 1.0e-8, weight_decay = 0.0, grad_clip = 0.0> {
  schedule.layer @la forward @a backward @a params []
  schedule.layer @lb forward @a backward @b_vjp params []
  schedule.host_buffer @x input "x" : tensor<4xf32>
  schedule.host_buffer @mask input "mask" : tensor<4xf32>
  schedule.host_buffer @h activation : tensor<4xf32>
  schedule.host_buffer @loss loss : tensor<f32>
  schedule.stage @F0 forward layers [0, 1) {
    schedule.await_weights
    schedule.micro_batch {
      %x = schedule.upload @x : tensor<4xf32>
      %m = schedule.upload @mask : tensor<4xf32>
      schedule.prefetch_next
      %h = schedule.call @a(%x) : (tensor<4xf32>) -> tensor<4xf32>
      schedule.download %h to @h : tensor<4xf32>
      %m2 = schedule.upload @mask : tensor<4xf32>
    }
  }
  schedule.stage @B0 fused_tail layers [1, 2) {
    schedule.await_weights
    schedule.micro_batch {
      %h = schedule.upload @h after @F0 : tensor<4xf32>
      schedule.prefetch_next
      %r:2 = schedule.call @b_vjp(%h) : (tensor<4xf32>) -> (tensor<f32>, tensor<4xf32>)
      schedule.download %r#0 to @loss : tensor<f32>
    }
    schedule.download_grads
  }
  schedule.stage @B1 backward layers [0, 1) {
    schedule.await_weights
    schedule.micro_batch {
      %x = schedule.upload @x : tensor<4xf32>
      schedule.prefetch_next
    }
    schedule.download_grads
  }
}

// -----

// Dead stores: an activation and a cotangent no upload reads go with their buffers; the
// activation @B0 reads and the loss (read by the host) stay.
// CHECK-LABEL: schedule.plan @downloads
// CHECK-NEXT:   schedule.layer @la
// CHECK-NEXT:   schedule.layer @lb
// CHECK-NEXT:   schedule.host_buffer @x input "x" : tensor<4xf32>
// CHECK-NEXT:   schedule.host_buffer @h activation : tensor<4xf32>
// CHECK-NEXT:   schedule.host_buffer @loss loss : tensor<f32>
// CHECK-NEXT:   schedule.stage @F0
// CHECK-NOT:    @dead
// CHECK:          schedule.download %{{.+}} to @h : tensor<4xf32>
// CHECK-NEXT:   }
// CHECK-NEXT: }
// CHECK-NEXT: schedule.stage @B0
// CHECK:          schedule.download %{{.+}}#0 to @loss : tensor<f32>
// CHECK-NEXT:   }
// CHECK-NEXT:   schedule.download_grads
// CHECK-NOT:    @dh
// CHECK:      schedule.stage @B1
func.func private @a(tensor<4xf32>) -> tensor<4xf32>
func.func private @b_vjp(tensor<4xf32>) -> (tensor<f32>, tensor<4xf32>)
schedule.plan @downloads micro_batches 2 gpus 1 update sync recompute stage dtype f32
    optimizer #schedule.adamw<lr = 1.0e-3, beta1 = 0.9, beta2 = 0.999, eps = 1.0e-8, weight_decay = 0.0, grad_clip = 0.0> {
  schedule.layer @la forward @a backward @a params []
  schedule.layer @lb forward @a backward @b_vjp params []
  schedule.host_buffer @x input "x" : tensor<4xf32>
  schedule.host_buffer @h activation : tensor<4xf32>
  schedule.host_buffer @dead activation : tensor<4xf32>
  schedule.host_buffer @loss loss : tensor<f32>
  schedule.host_buffer @dh cotangent : tensor<4xf32>
  schedule.stage @F0 forward layers [0, 1) {
    schedule.await_weights
    schedule.micro_batch {
      %x = schedule.upload @x : tensor<4xf32>
      schedule.prefetch_next
      %h = schedule.call @a(%x) : (tensor<4xf32>) -> tensor<4xf32>
      schedule.download %h to @dead : tensor<4xf32>
      schedule.download %h to @h : tensor<4xf32>
    }
  }
  schedule.stage @B0 fused_tail layers [1, 2) {
    schedule.await_weights
    schedule.micro_batch {
      %h = schedule.upload @h after @F0 : tensor<4xf32>
      schedule.prefetch_next
      %r:2 = schedule.call @b_vjp(%h) : (tensor<4xf32>) -> (tensor<f32>, tensor<4xf32>)
      schedule.download %r#0 to @loss : tensor<f32>
      schedule.download %r#1 to @dh : tensor<4xf32>
    }
    schedule.download_grads
  }
  schedule.stage @B1 backward layers [0, 1) {
    schedule.await_weights
    schedule.micro_batch {
      %x = schedule.upload @x : tensor<4xf32>
      schedule.prefetch_next
    }
    schedule.download_grads
  }
}

// -----

// A chain: @B1's upload of the cotangent is unused (the input upload is ahead of the
// prefetch too), so it goes; then @B0's download of it is dead and goes with the buffer.
// CHECK-LABEL: schedule.plan @chain
// CHECK-NOT:  @dh
// CHECK:      schedule.stage @B1 backward layers [0, 1) {
// CHECK-NEXT:   schedule.await_weights
// CHECK-NEXT:   schedule.micro_batch {
// CHECK-NEXT:     %[[X:.+]] = schedule.upload @x : tensor<4xf32>
// CHECK-NEXT:     schedule.prefetch_next
// CHECK-NEXT:     schedule.call @a(%[[X]])
// CHECK-NEXT:   }
// CHECK-NOT:  @dh
func.func private @a(tensor<4xf32>) -> tensor<4xf32>
func.func private @b_vjp(tensor<4xf32>) -> (tensor<f32>, tensor<4xf32>)
schedule.plan @chain micro_batches 2 gpus 1 update sync recompute stage dtype f32
    optimizer #schedule.adamw<lr = 1.0e-3, beta1 = 0.9, beta2 = 0.999, eps = 1.0e-8, weight_decay = 0.0, grad_clip = 0.0> {
  schedule.layer @la forward @a backward @a params []
  schedule.layer @lb forward @a backward @b_vjp params []
  schedule.host_buffer @x input "x" : tensor<4xf32>
  schedule.host_buffer @h activation : tensor<4xf32>
  schedule.host_buffer @loss loss : tensor<f32>
  schedule.host_buffer @dh cotangent : tensor<4xf32>
  schedule.stage @F0 forward layers [0, 1) {
    schedule.await_weights
    schedule.micro_batch {
      %x = schedule.upload @x : tensor<4xf32>
      schedule.prefetch_next
      %h = schedule.call @a(%x) : (tensor<4xf32>) -> tensor<4xf32>
      schedule.download %h to @h : tensor<4xf32>
    }
  }
  schedule.stage @B0 fused_tail layers [1, 2) {
    schedule.await_weights
    schedule.micro_batch {
      %h = schedule.upload @h after @F0 : tensor<4xf32>
      schedule.prefetch_next
      %r:2 = schedule.call @b_vjp(%h) : (tensor<4xf32>) -> (tensor<f32>, tensor<4xf32>)
      schedule.download %r#0 to @loss : tensor<f32>
      schedule.download %r#1 to @dh : tensor<4xf32>
    }
    schedule.download_grads
  }
  schedule.stage @B1 backward layers [0, 1) {
    schedule.await_weights
    schedule.micro_batch {
      %x = schedule.upload @x : tensor<4xf32>
      %dh = schedule.upload @dh after @B0 : tensor<4xf32>
      schedule.prefetch_next
      %y = schedule.call @a(%x) : (tensor<4xf32>) -> tensor<4xf32>
    }
    schedule.download_grads
  }
}

// -----

// Near miss: the only upload ahead of the prefetch is unused but stays, so the cotangent
// it reads and @B0's download of it stay too.
// CHECK-LABEL: schedule.plan @kept
// CHECK:      schedule.host_buffer @dh cotangent : tensor<4xf32>
// CHECK:      schedule.download %{{.+}}#1 to @dh : tensor<4xf32>
// CHECK:      schedule.stage @B1 backward layers [0, 1) {
// CHECK-NEXT:   schedule.await_weights
// CHECK-NEXT:   schedule.micro_batch {
// CHECK-NEXT:     schedule.upload @dh after @B0 : tensor<4xf32>
// CHECK-NEXT:     schedule.prefetch_next
// CHECK-NEXT:   }
func.func private @a(tensor<4xf32>) -> tensor<4xf32>
func.func private @b_vjp(tensor<4xf32>) -> (tensor<f32>, tensor<4xf32>)
schedule.plan @kept micro_batches 2 gpus 1 update sync recompute stage dtype f32
    optimizer #schedule.adamw<lr = 1.0e-3, beta1 = 0.9, beta2 = 0.999, eps = 1.0e-8, weight_decay = 0.0, grad_clip = 0.0> {
  schedule.layer @la forward @a backward @a params []
  schedule.layer @lb forward @a backward @b_vjp params []
  schedule.host_buffer @x input "x" : tensor<4xf32>
  schedule.host_buffer @h activation : tensor<4xf32>
  schedule.host_buffer @loss loss : tensor<f32>
  schedule.host_buffer @dh cotangent : tensor<4xf32>
  schedule.stage @F0 forward layers [0, 1) {
    schedule.await_weights
    schedule.micro_batch {
      %x = schedule.upload @x : tensor<4xf32>
      schedule.prefetch_next
      %h = schedule.call @a(%x) : (tensor<4xf32>) -> tensor<4xf32>
      schedule.download %h to @h : tensor<4xf32>
    }
  }
  schedule.stage @B0 fused_tail layers [1, 2) {
    schedule.await_weights
    schedule.micro_batch {
      %h = schedule.upload @h after @F0 : tensor<4xf32>
      schedule.prefetch_next
      %r:2 = schedule.call @b_vjp(%h) : (tensor<4xf32>) -> (tensor<f32>, tensor<4xf32>)
      schedule.download %r#0 to @loss : tensor<f32>
      schedule.download %r#1 to @dh : tensor<4xf32>
    }
    schedule.download_grads
  }
  schedule.stage @B1 backward layers [0, 1) {
    schedule.await_weights
    schedule.micro_batch {
      %dh = schedule.upload @dh after @B0 : tensor<4xf32>
      schedule.prefetch_next
    }
    schedule.download_grads
  }
}
