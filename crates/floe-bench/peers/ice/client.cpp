// ZeroC Ice 3.7 C++11 benchmark client: runs one test for a bounded time and prints
// "<operations> <seconds>".
// Usage: ice-client <port> <test> <duration-ms> <param>
#include <Ice/Ice.h>
#include <Bench.h>

#include <chrono>
#include <cmath>
#include <vector>
#include <deque>
#include <iostream>
#include <string>
#include <functional>
#include <cstdlib>
#include <fstream>
#include <sstream>

using namespace std;
using namespace Bench;

using PerfHandle = shared_ptr<PerfPrx>;

// The request a batched-oneway test queues: o() for the sender side, incr() when delivery is
// counted, or a cxRmi payload variant ("batch-send-d4": four double parameters 1, 2, 3, 4).
static function<void(const PerfHandle&)> batchCall(const string& test)
{
    if(test == "batch-send") return [](const PerfHandle& b) { b->o(); };
    if(test == "batch-delivered") return [](const PerfHandle& b) { b->incr(); };
    string variant = test.substr(test.rfind('-') + 1);
    if(variant == "b1") return [](const PerfHandle& b) { b->b1(1); };
    if(variant == "b2") return [](const PerfHandle& b) { b->b2(1, 2); };
    if(variant == "b4") return [](const PerfHandle& b) { b->b4(1, 2, 3, 4); };
    if(variant == "b8") return [](const PerfHandle& b) { b->b8(1, 2, 3, 4, 5, 6, 7, 8); };
    if(variant == "s1") return [](const PerfHandle& b) { b->s1(1); };
    if(variant == "s2") return [](const PerfHandle& b) { b->s2(1, 2); };
    if(variant == "s4") return [](const PerfHandle& b) { b->s4(1, 2, 3, 4); };
    if(variant == "s8") return [](const PerfHandle& b) { b->s8(1, 2, 3, 4, 5, 6, 7, 8); };
    if(variant == "i1") return [](const PerfHandle& b) { b->i1(1); };
    if(variant == "i2") return [](const PerfHandle& b) { b->i2(1, 2); };
    if(variant == "i4") return [](const PerfHandle& b) { b->i4(1, 2, 3, 4); };
    if(variant == "i8") return [](const PerfHandle& b) { b->i8(1, 2, 3, 4, 5, 6, 7, 8); };
    if(variant == "l1") return [](const PerfHandle& b) { b->l1(1); };
    if(variant == "l2") return [](const PerfHandle& b) { b->l2(1, 2); };
    if(variant == "l4") return [](const PerfHandle& b) { b->l4(1, 2, 3, 4); };
    if(variant == "l8") return [](const PerfHandle& b) { b->l8(1, 2, 3, 4, 5, 6, 7, 8); };
    if(variant == "f1") return [](const PerfHandle& b) { b->f1(1); };
    if(variant == "f2") return [](const PerfHandle& b) { b->f2(1, 2); };
    if(variant == "f4") return [](const PerfHandle& b) { b->f4(1, 2, 3, 4); };
    if(variant == "f8") return [](const PerfHandle& b) { b->f8(1, 2, 3, 4, 5, 6, 7, 8); };
    if(variant == "d1") return [](const PerfHandle& b) { b->d1(1); };
    if(variant == "d2") return [](const PerfHandle& b) { b->d2(1, 2); };
    if(variant == "d4") return [](const PerfHandle& b) { b->d4(1, 2, 3, 4); };
    if(variant == "d8") return [](const PerfHandle& b) { b->d8(1, 2, 3, 4, 5, 6, 7, 8); };
    cerr << "unknown payload variant " << variant << endl;
    exit(2);
}

// Prints this process's peak RSS (VmHWM) on stderr at exit, for the suite's resource figures.
static void reportPeakRss()
{
    ifstream status("/proc/self/status");
    string line;
    while(getline(status, line))
    {
        if(line.compare(0, 6, "VmHWM:") == 0)
        {
            istringstream fields(line.substr(6));
            long kb = 0;
            fields >> kb;
            cerr << "peak-rss-kb " << kb << endl;
        }
    }
}

int main(int argc, char* argv[])
{
    atexit(reportPeakRss);
    if(argc < 5)
    {
        cerr << "usage: ice-client <port> <test> <duration-ms> <param> [ssl] [--IceSSL.X=Y ...]" << endl;
        return 2;
    }
    Ice::InitializationData init;
    // Takes the --Ice.* and --IceSSL.* arguments out of argv.
    init.properties = Ice::createProperties(argc, argv);
    string transport = argc > 5 ? argv[5] : "tcp";
    string port = argv[1], test = argv[2];
    auto duration = chrono::milliseconds(stoi(argv[3]));
    int param = stoi(argv[4]);
    init.properties->setProperty("Ice.MessageSizeMax", "100000");
    init.properties->setProperty("Ice.ACM.Timeout", "0");
    Ice::CommunicatorHolder ich(init);
    auto p = Ice::uncheckedCast<PerfPrx>(ich->stringToProxy("a:" + transport + " -h 127.0.0.1 -p " + port));
    p->ice_ping();
    // Sequence sizes for the throughput tests (a sender-side batching test's param is its round).
    auto n = static_cast<size_t>(test.compare(0, 10, "batch-send") == 0 ? 0 : param);
    ByteSeq bytes(n);
    FixedSeq fixed(n, Fixed{1, 2, 3.0});
    StringDoubleSeq sds(n, StringDouble{"hello", 3.14});
    // Warm up.
    for(int i = 0; i < 100; ++i)
    {
        p->o();
    }
    long long ops = 0;
    auto start = chrono::steady_clock::now();
    auto deadline = start + duration;
    if(test == "twoway")
    {
        while(chrono::steady_clock::now() < deadline) { for(int i = 0; i < 100; ++i) p->o(); ops += 100; }
    }
    else if(test == "demarey")
    {
        // Demarey et al.: warm-up, then steps of `param` calls; per-call latency of each step.
        for(int i = 0; i < 1000; ++i) p->o();
        vector<double> steps;
        start = chrono::steady_clock::now();
        for(int step = 0; step < 10; ++step)
        {
            auto s0 = chrono::steady_clock::now();
            for(int i = 0; i < param; ++i) p->o();
            steps.push_back(chrono::duration<double, micro>(chrono::steady_clock::now() - s0).count() / param);
            ops += param;
        }
        auto end = chrono::steady_clock::now();
        double mean = 0, mn = 1e18, mx = 0, var = 0;
        for(double v : steps) { mean += v; mn = min(mn, v); mx = max(mx, v); }
        mean /= steps.size();
        for(double v : steps) var += (v - mean) * (v - mean);
        cout << ops << " " << chrono::duration<double>(end - start).count() << " " << mean << " " << mn << " " << mx << " " << sqrt(var / steps.size()) << endl;
        return 0;
    }
    else if(test == "oneway")
    {
        auto o = p->ice_oneway();
        while(chrono::steady_clock::now() < deadline) { for(int i = 0; i < 1000; ++i) o->o(); ops += 1000; }
        p->ice_ping();
    }
    else if(test == "batch-send" || test.compare(0, 11, "batch-send-") == 0)
    {
        // cxRmi TEST1 times only the batching: rounds of `param` requests queued on a
        // batch-oneway proxy (Ice flushes a full batch by itself, without waiting); each round
        // is then flushed and confirmed by a ping, untimed.
        auto queue = batchCall(test);
        auto b = p->ice_batchOneway();
        chrono::duration<double> queuing(0);
        while(ops == 0 || chrono::steady_clock::now() < deadline)
        {
            auto t0 = chrono::steady_clock::now();
            for(int i = 0; i < param; ++i) queue(b);
            queuing += chrono::steady_clock::now() - t0;
            ops += param;
            b->ice_flushBatchRequests();
            p->ice_ping();
        }
        cout << ops << " " << queuing.count() << endl;
        return 0;
    }
    else if(test == "batch-delivered" || test.compare(0, 16, "batch-delivered-") == 0)
    {
        auto queue = batchCall(test);
        p->reset();
        auto b = p->ice_batchOneway();
        while(chrono::steady_clock::now() < deadline) { for(int i = 0; i < 10000; ++i) queue(b); b->ice_flushBatchRequests(); ops += 10000; }
        auto giveUp = chrono::steady_clock::now() + chrono::seconds(30);
        while(p->count() < ops)
        {
            if(chrono::steady_clock::now() > giveUp)
            {
                cerr << "batched requests lost" << endl;
                return 1;
            }
        }
    }
    else if(test == "ami")
    {
        deque<future<void>> inflight;
        while(chrono::steady_clock::now() < deadline)
        {
            for(int i = 0; i < 100; ++i)
            {
                inflight.push_back(p->oAsync());
                if(inflight.size() >= static_cast<size_t>(param)) { inflight.front().get(); inflight.pop_front(); }
            }
            ops += 100;
        }
        for(auto& f : inflight) f.get();
    }
    else if(test == "bytes-send")
    {
        auto range = make_pair(bytes.data(), bytes.data() + bytes.size());
        while(chrono::steady_clock::now() < deadline) { p->sendByteSeq(range); ++ops; }
    }
    else if(test == "bytes-recv")
    {
        while(chrono::steady_clock::now() < deadline) { p->recvByteSeq(param); ++ops; }
    }
    else if(test == "fixed-send")
    {
        while(chrono::steady_clock::now() < deadline) { p->sendFixedSeq(fixed); ++ops; }
    }
    else if(test == "fixed-recv")
    {
        while(chrono::steady_clock::now() < deadline) { p->recvFixedSeq(param); ++ops; }
    }
    else if(test == "strings-send")
    {
        while(chrono::steady_clock::now() < deadline) { p->sendStringDoubleSeq(sds); ++ops; }
    }
    else if(test == "strings-recv")
    {
        while(chrono::steady_clock::now() < deadline) { p->recvStringDoubleSeq(param); ++ops; }
    }
    else if(test == "work")
    {
        while(chrono::steady_clock::now() < deadline) { p->work(param); ++ops; }
    }
    else
    {
        cerr << "unknown test " << test << endl;
        return 2;
    }
    auto end = chrono::steady_clock::now();
    cout << ops << " " << chrono::duration<double>(end - start).count() << endl;
    return 0;
}
