// The bookkeeping that lets a CUDA norm or SwiGLU quantize its output for the matmul after it
// (fused_input_quantization.h): a matmul may skip its quantization only right after the producer,
// on exactly its output, in the type it wrote, and while the scratch still holds it.
#include "backend/cuda/fused_input_quantization.h"

#include <gtest/gtest.h>

namespace lumen::backend::cuda {
namespace {

using tensor::DType;

// Addresses stand for a norm's weight (the site) and its output buffer.
const int kSite = 1, kOther = 2;  // two objects, two addresses
const void* const site = &kSite;
const void* const other_site = &kOther;
float buffer[4], other_buffer[4];
const void* const out = buffer;
const void* const other_out = other_buffer;

TEST(FusedInputQuantization, LearnsTheConsumersTypeThenHandsItOver) {
  FusedInputQuantization f;
  EXPECT_FALSE(f.emit_for(site, 2048)) << "no consumer seen yet";
  f.produced(site, out, 1, 2048, 2048, std::nullopt, 10);
  EXPECT_FALSE(f.consume(out, DType::Q8_K, 1, 2048, 2048, 11)) << "nothing was quantized";
  ASSERT_EQ(f.emit_for(site, 2048), DType::Q8_K);
  EXPECT_FALSE(f.emit_for(other_site, 2048));

  f.produced(site, out, 1, 2048, 2048, DType::Q8_K, 20);
  EXPECT_TRUE(f.consume(out, DType::Q8_K, 1, 2048, 2048, 21));
  EXPECT_TRUE(f.consume(out, DType::Q8_K, 1, 2048, 2048, 21)) << "a second output of the same matmul_same_input";
  EXPECT_EQ(f.prequantized(), 2u);
}

TEST(FusedInputQuantization, OnlyTheVeryNextOpCallReadsIt) {
  FusedInputQuantization f;
  f.produced(site, out, 1, 2048, 2048, DType::Q8_0, 10);
  EXPECT_FALSE(f.consume(out, DType::Q8_0, 1, 2048, 2048, 12)) << "an op ran in between";
  EXPECT_FALSE(f.consume(out, DType::Q8_0, 1, 2048, 2048, 10)) << "inside the producer's own call";
  EXPECT_EQ(f.prequantized(), 0u);
}

TEST(FusedInputQuantization, ADifferentInputShapeOrTypeQuantizesAgain) {
  FusedInputQuantization f;
  f.produced(site, out, 2, 2048, 2048, DType::Q8_0, 10);
  EXPECT_FALSE(f.consume(other_out, DType::Q8_0, 2, 2048, 2048, 11)) << "another tensor";
  EXPECT_FALSE(f.consume(out, DType::Q8_0, 1, 2048, 2048, 11)) << "fewer rows";
  EXPECT_FALSE(f.consume(out, DType::Q8_0, 2, 1024, 1024, 11)) << "narrower";
  EXPECT_FALSE(f.consume(out, DType::Q8_0, 2, 2048, 4096, 11)) << "rows further apart";
  EXPECT_FALSE(f.consume(out, DType::Q8_1, 2, 2048, 2048, 11)) << "Q8_1 needs the sums Q8_0 lacks";
  EXPECT_FALSE(f.consume(out, DType::F32, 2, 2048, 2048, 11)) << "float weights read f32";
}

TEST(FusedInputQuantization, AQuantizationOverTheScratchEndsIt) {
  FusedInputQuantization f;
  f.produced(site, out, 1, 2048, 2048, DType::Q8_K, 10);
  EXPECT_TRUE(f.consume(out, DType::Q8_K, 1, 2048, 2048, 11));
  f.scratch_overwritten();  // a later output of another type quantized the same input
  EXPECT_FALSE(f.consume(out, DType::Q8_K, 1, 2048, 2048, 11));
  f.produced(site, out, 1, 2048, 2048, DType::Q8_K, 20);
  f.reset_producer();
  EXPECT_FALSE(f.consume(out, DType::Q8_K, 1, 2048, 2048, 21));
}

// The GLU epilogue writes its codes to a buffer of its own: the consumer is told where, and a
// quantization over the shared scratch (the consumer's own, before it asks) does not end them.
TEST(FusedInputQuantization, CodesElsewhereAreNamedAndOutliveTheScratch) {
  FusedInputQuantization f;
  int buffer = 0;
  f.produced(site, out, 2, 2048, 2048, DType::Q8_1, 30, &buffer);
  f.scratch_overwritten();
  EXPECT_TRUE(f.consume(out, DType::Q8_1, 2, 2048, 2048, 31));
  EXPECT_EQ(f.producer_codes(), &buffer);
  EXPECT_FALSE(f.consume(out, DType::Q8_0, 2, 2048, 2048, 31)) << "another type";
  f.produced(site, out, 2, 2048, 2048, DType::Q8_1, 40);
  EXPECT_TRUE(f.consume(out, DType::Q8_1, 2, 2048, 2048, 41));
  EXPECT_EQ(f.producer_codes(), nullptr) << "the shared scratch again";
}

TEST(FusedInputQuantization, TheFirstConsumerNamesTheType) {
  FusedInputQuantization f;
  f.produced(site, out, 1, 2048, 2048, std::nullopt, 10);
  EXPECT_FALSE(f.consume(out, DType::Q8_0, 1, 2048, 2048, 11));  // Q of a Q5_0 layer
  EXPECT_FALSE(f.consume(out, DType::Q8_K, 1, 2048, 2048, 11));  // K of a Q4_K one
  EXPECT_EQ(f.emit_for(site, 2048), DType::Q8_0);
}

TEST(FusedInputQuantization, EmitsOnlyWholeBlocks) {
  FusedInputQuantization f;
  f.produced(site, out, 1, 2048, 2048, std::nullopt, 1);
  f.consume(out, DType::Q8_K, 1, 2048, 2048, 2);
  EXPECT_EQ(f.emit_for(site, 2048), DType::Q8_K);
  EXPECT_FALSE(f.emit_for(site, 576)) << "not whole 256-value super-blocks";
  f.produced(other_site, other_out, 1, 576, 576, std::nullopt, 3);
  f.consume(other_out, DType::Q8_0, 1, 576, 576, 4);
  EXPECT_EQ(f.emit_for(other_site, 576), DType::Q8_0);
  EXPECT_FALSE(f.emit_for(other_site, 580));
}

}  // namespace
}  // namespace lumen::backend::cuda
